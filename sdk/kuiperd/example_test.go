package kuiperd_test

import (
	"github.com/rekuiper/rekuiper/sdk"
	"github.com/rekuiper/rekuiper/sdk/kuiperd"
)

// A custom kuiperd: the built-ins plus one extension module.
func ExampleMain() {
	register := func(r *sdk.Registry) error {
		return r.RegisterScalar("answer", sdk.FuncSpec{}, func(sdk.FuncContext, []any) (any, error) { return int64(42), nil })
	}
	_ = func() { kuiperd.Main(register) } // in package main: func main() { kuiperd.Main(register) }
}
