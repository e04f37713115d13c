package sdk_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/sdk"
)

// upper is a sink that prints each row's "text" in upper case.
type upper struct{ prefix string }

func (u upper) Connect(context.Context) error { return nil }
func (u upper) Close(context.Context) error   { return nil }
func (u upper) Write(_ context.Context, m *api.SinkMessage) error {
	for _, r := range m.Rows {
		fmt.Println(u.prefix + strings.ToUpper(fmt.Sprint(r["text"])))
	}
	return nil
}

// An extension module exports a Register function; its spec validates the
// properties before the factory runs.
func ExampleRegistry_RegisterSink() {
	r := sdk.NewRegistry()
	err := r.RegisterSink("upper", sdk.Spec{Props: []sdk.Prop{
		{Name: "prefix", Type: sdk.TypeString, Default: "> ", Doc: "printed before each row"},
	}}, func(props map[string]any, _ sdk.Deps) (api.Sink, error) {
		return upper{prefix: props["prefix"].(string)}, nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := r.NewSink("upper", map[string]any{}, sdk.Deps{})
	if err != nil {
		fmt.Println(err)
		return
	}
	s.Write(context.Background(), &api.SinkMessage{Rows: []map[string]any{{"text": "hello"}}})
	_, err = r.NewSink("upper", map[string]any{"prefix": 1, "colour": "red"}, sdk.Deps{})
	fmt.Println(err != nil)
	// Output:
	// > HELLO
	// true
}

// A scalar function with its arguments checked when a rule is created.
func ExampleRegistry_RegisterScalar() {
	r := sdk.NewRegistry()
	err := r.RegisterScalar("clamp", sdk.FuncSpec{MinArgs: 3, MaxArgs: 3, Check: func(args []sdk.Arg) error {
		for _, a := range args[1:] {
			if _, ok := a.Value.(int64); !ok {
				return fmt.Errorf("clamp: bounds must be integer literals, got %s", a.SQL)
			}
		}
		return nil
	}}, func(_ sdk.FuncContext, args []any) (any, error) {
		n, lo, hi := args[0].(int64), args[1].(int64), args[2].(int64)
		return min(max(n, lo), hi), nil
	})
	fmt.Println(err)
	// Output: <nil>
}
