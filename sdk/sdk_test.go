package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/client"
	"github.com/rekuiper/rekuiper/sdk"
)

// counter emits {"n": start}, {"n": start+1}, ... up to limit, then waits.
type counter struct{ next, limit int64 }

func (c *counter) Connect(context.Context) error { return nil }
func (c *counter) Close(context.Context) error   { return nil }
func (c *counter) Read(ctx context.Context) (*api.Message, error) {
	if c.next > c.limit {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	c.next++
	return &api.Message{Data: map[string]any{"n": c.next - 1}}, nil
}

// collect hands every delivered row to a channel.
type collect struct{ rows chan<- map[string]any }

func (c collect) Connect(context.Context) error { return nil }
func (c collect) Close(context.Context) error   { return nil }
func (c collect) Write(ctx context.Context, m *api.SinkMessage) error {
	for _, r := range m.Rows {
		select {
		case c.rows <- r:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func register(rows chan<- map[string]any) sdk.RegisterFunc {
	return func(r *sdk.Registry) error {
		err := r.RegisterSource("counter", sdk.Spec{Props: []sdk.Prop{
			{Name: "start", Type: sdk.TypeInt, Default: 1},
			{Name: "limit", Type: sdk.TypeInt, Required: true},
		}}, func(p map[string]any, _ sdk.Deps) (api.Source, error) {
			return &counter{next: p["start"].(int64), limit: p["limit"].(int64)}, nil
		})
		if err != nil {
			return err
		}
		if err := r.RegisterSink("collect", sdk.Spec{}, func(map[string]any, sdk.Deps) (api.Sink, error) {
			return collect{rows}, nil
		}); err != nil {
			return err
		}
		if err := r.RegisterScalar("scale", sdk.FuncSpec{MinArgs: 2, MaxArgs: 2, Check: func(args []sdk.Arg) error {
			if _, ok := args[1].Value.(int64); !ok {
				return fmt.Errorf("scale: the factor must be an integer literal, got %s", args[1].SQL)
			}
			return nil
		}}, func(_ sdk.FuncContext, args []any) (any, error) {
			n, ok := args[0].(int64)
			if !ok {
				return nil, fmt.Errorf("scale: %v is not an integer", args[0])
			}
			return n * args[1].(int64), nil
		}); err != nil {
			return err
		}
		if err := r.RegisterScalar("seen", sdk.FuncSpec{}, func(ctx sdk.FuncContext, _ []any) (any, error) {
			return ctx.State().Increment("seen", 1)
		}); err != nil {
			return err
		}
		return r.RegisterAggregate("span", sdk.FuncSpec{MinArgs: 1, MaxArgs: 1}, func(_ sdk.FuncContext, cols [][]any) (any, error) {
			var lo, hi int64
			for i, v := range cols[0] {
				n := v.(int64)
				if i == 0 || n < lo {
					lo = n
				}
				if i == 0 || n > hi {
					hi = n
				}
			}
			return hi - lo, nil
		})
	}
}

// startDaemon runs the daemon in process with regs on an ephemeral port.
// It returns the daemon's start error instead of a client when it fails.
func startDaemon(t *testing.T, regs ...sdk.RegisterFunc) (*client.Client, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- sdk.Run(ctx, sdk.Options{
			EtcDir: t.TempDir(), DataDir: t.TempDir(), LogDir: t.TempDir(),
			Environ:  []string{"KUIPER__BASIC__RESTPORT=0", "KUIPER__BASIC__RESTIP=127.0.0.1", "KUIPER__SOURCE__HTTPSERVERPORT=0", "KUIPER__BASIC__CONSOLELOG=false"},
			Stdout:   &strings.Builder{},
			Register: regs,
			Ready:    func(addr string) { ready <- addr },
		})
	}()
	select {
	case addr := <-ready:
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("daemon: %v", err)
			}
		})
		return client.New("http://"+addr, http.DefaultClient), nil
	case err := <-done:
		cancel()
		if err == nil {
			err = errors.New("daemon ended without an error before serving")
		}
		return nil, err
	}
}

// numsStream stores the counter source's properties under confKey "k" and
// creates the stream nums that reads them.
func numsStream(t *testing.T, c *client.Client, props string) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.Text(ctx, "PUT", "/metadata/sources/counter/confKeys/k", json.RawMessage(props)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateStream(ctx, client.Stream, `CREATE STREAM nums () WITH (TYPE="counter", CONF_KEY="k")`); err != nil {
		t.Fatal(err)
	}
}

func TestExtensionsInARule(t *testing.T) {
	rows := make(chan map[string]any, 100)
	c, err := startDaemon(t, register(rows))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	numsStream(t, c, `{"limit":7,"start":5}`)
	t.Run("bad argument refused at creation", func(t *testing.T) {
		_, err := c.CreateRule(ctx, []byte(`{"id":"bad","sql":"SELECT scale(n, 'x') FROM nums","actions":[{"collect":{}}]}`))
		var apiErr *client.APIError
		if !errors.As(err, &apiErr) || !strings.Contains(err.Error(), "the factor must be an integer literal, got \"x\"") {
			t.Fatalf("rule with a bad argument: %v", err)
		}
	})
	if _, err := c.CreateRule(ctx, []byte(`{"id":"r","sql":"SELECT n, scale(n, 10) AS s, seen() AS k FROM nums","actions":[{"collect":{}}]}`)); err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 3; i++ {
		select {
		case r := <-rows:
			n := 5 + i
			if r["n"] != n || r["s"] != n*10 || r["k"] != i+1 {
				t.Fatalf("row %d = %v, want n=%d s=%d k=%d", i, r, n, n*10, i+1)
			}
		case <-time.After(30 * time.Second):
			st, _ := c.RuleStatus(ctx, "r")
			t.Fatalf("row %d not delivered; rule status %s", i, st)
		}
	}
}

func TestAggregateInAWindow(t *testing.T) {
	rows := make(chan map[string]any, 100)
	c, err := startDaemon(t, register(rows))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	numsStream(t, c, `{"limit":7,"start":3}`)
	if _, err := c.CreateRule(ctx, []byte(`{"id":"w","sql":"SELECT span(n) AS sp, count(*) AS c FROM nums GROUP BY COUNTWINDOW(5)","actions":[{"collect":{}}]}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-rows:
		if r["sp"] != int64(4) || r["c"] != int64(5) {
			t.Fatalf("window row = %v, want sp=4 c=5", r)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("window not delivered")
	}
}

func TestRegistrationRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		reg  sdk.RegisterFunc
		want string
	}{
		{"built-in source name", func(r *sdk.Registry) error {
			return r.RegisterSource("Memory", sdk.Spec{}, func(map[string]any, sdk.Deps) (api.Source, error) { return nil, nil })
		}, `register source "Memory": already registered`},
		{"built-in function name", func(r *sdk.Registry) error {
			return r.RegisterScalar("ABS", sdk.FuncSpec{MinArgs: 1, MaxArgs: 1}, func(sdk.FuncContext, []any) (any, error) { return nil, nil })
		}, "register function abs: function already registered"},
		{"bad spec", func(r *sdk.Registry) error {
			return r.RegisterSink("s", sdk.Spec{Props: []sdk.Prop{{Name: "x", Type: "integer"}}}, func(map[string]any, sdk.Deps) (api.Sink, error) { return nil, nil })
		}, `unknown type "integer"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := startDaemon(t, tc.reg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("start error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestPanickingExtensionsAreErrors(t *testing.T) {
	r := sdk.NewRegistry()
	if err := r.RegisterSink("boom", sdk.Spec{}, func(map[string]any, sdk.Deps) (api.Sink, error) { panic("bad sink") }); err != nil {
		t.Fatal(err)
	}
	if _, err := r.NewSink("boom", nil, sdk.Deps{}); err == nil || !strings.Contains(err.Error(), "bad sink") {
		t.Fatalf("panicking factory returned %v", err)
	}
	rows := make(chan map[string]any, 10)
	c, err := startDaemon(t, register(rows), func(r *sdk.Registry) error {
		return r.RegisterScalar("explode", sdk.FuncSpec{MinArgs: 1, MaxArgs: 1}, func(_ sdk.FuncContext, a []any) (any, error) { panic("kaboom") })
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	numsStream(t, c, `{"limit":2}`)
	if _, err := c.CreateRule(ctx, []byte(`{"id":"p","sql":"SELECT n, explode(n) AS x FROM nums","actions":[{"collect":{}}],"options":{"sendError":true}}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-rows:
		if !strings.Contains(fmt.Sprint(r), "kaboom") {
			t.Fatalf("delivered %v, want the function's panic as an error", r)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("nothing delivered")
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("daemon gone after a panicking function: %v", err)
	}
}
