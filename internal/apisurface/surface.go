// Package apisurface lists the exported API of rekuiper's public packages
// (api, sdk, sdk/kuiperd and sdk/sdktest), one line per exported name, field and method, so that a
// test can compare it with the surface recorded at the last release and
// report what changed incompatibly.
//
// It reads the packages through the compiler's export data (`go list
// -export`), so what it lists is what another module compiles against,
// including the fields and methods reached through type aliases of
// internal types.
package apisurface

import (
	"encoding/json"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
)

// Packages are the public packages whose surface is kept compatible.
var Packages = []string{
	"github.com/rekuiper/rekuiper/api",
	"github.com/rekuiper/rekuiper/sdk",
	"github.com/rekuiper/rekuiper/sdk/kuiperd",
	"github.com/rekuiper/rekuiper/sdk/sdktest",
}

// Surface returns the sorted lines describing the exported API of pkgs,
// built from dir (a folder inside the module) with the go command's build
// flags (a test built with -race passes -race, to reuse its build cache).
func Surface(dir string, flags []string, pkgs ...string) ([]string, error) {
	exports, err := exportData(dir, flags, pkgs)
	if err != nil {
		return nil, err
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	var lines []string
	for _, p := range pkgs {
		pkg, err := imp.Import(p)
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", p, err)
		}
		lines = append(lines, describe(pkg)...)
	}
	sort.Strings(lines)
	return lines, nil
}

func exportData(dir string, flags, pkgs []string) (map[string]string, error) {
	args := append([]string{"list", "-export", "-deps", "-json=ImportPath,Export"}, flags...)
	args = append(args, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return nil, fmt.Errorf("go list: %w: %s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("go list: %w", err)
	}
	exports := map[string]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		exports[p.ImportPath] = p.Export
	}
	return exports, nil
}

// describe lists pkg's exported objects: "pkg, func F(...)", "pkg, type T
// struct", "pkg, type T struct, F int", "pkg, method (*T) M(...)", ...
func describe(pkg *types.Package) []string {
	qual := func(p *types.Package) string {
		if p == pkg {
			return ""
		}
		return p.Path()
	}
	prefix := "pkg " + pkg.Path() + ", "
	var lines []string
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.TypeName:
			lines = append(lines, typeLines(o, qual)...)
		case *types.Const:
			lines = append(lines, prefix+"const "+name+" "+types.TypeString(o.Type(), qual)+" = "+o.Val().ExactString())
		case *types.Func:
			lines = append(lines, "func "+name+sigString(o.Type().(*types.Signature), qual))
		default:
			lines = append(lines, types.ObjectString(obj, qual))
		}
	}
	for i := range lines {
		if !strings.HasPrefix(lines[i], prefix) {
			lines[i] = prefix + lines[i]
		}
	}
	return lines
}

// typeLines describes a type: its kind, then its exported fields or
// interface methods, then the exported methods of its method set. An alias
// is described as the type it names, since that is what users compile
// against.
func typeLines(o *types.TypeName, qual types.Qualifier) []string {
	name := o.Name()
	t := types.Unalias(o.Type())
	var lines []string
	kind := types.TypeString(t.Underlying(), qual)
	switch u := t.Underlying().(type) {
	case *types.Signature:
		kind = "func" + sigString(u, qual)
	case *types.Struct:
		kind = "struct"
		for f := range u.Fields() {
			if f.Exported() {
				lines = append(lines, "type "+name+" struct, "+f.Name()+" "+types.TypeString(f.Type(), qual))
			}
		}
	case *types.Interface:
		kind = "interface"
		for m := range u.Methods() {
			if m.Exported() {
				lines = append(lines, "type "+name+" interface, "+m.Name()+sigString(m.Type().(*types.Signature), qual))
			}
		}
	}
	lines = append(lines, "type "+name+" "+kind)
	if _, isIface := t.Underlying().(*types.Interface); !isIface {
		ms := types.NewMethodSet(types.NewPointer(t))
		for sel := range ms.Methods() {
			m := sel.Obj()
			if !m.Exported() {
				continue
			}
			sig := m.Type().(*types.Signature)
			recv := name
			if _, ptr := sig.Recv().Type().(*types.Pointer); ptr {
				recv = "*" + name
			}
			lines = append(lines, "method ("+recv+") "+m.Name()+sigString(sig, qual))
		}
	}
	return lines
}

// sigString prints a signature without parameter names, which callers do
// not compile against: "(string, ...int) (T, error)".
func sigString(sig *types.Signature, qual types.Qualifier) string {
	list := func(t *types.Tuple, variadic bool) []string {
		var out []string
		for i := range t.Len() {
			typ := t.At(i).Type()
			if variadic && i == t.Len()-1 {
				out = append(out, "..."+types.TypeString(typ.(*types.Slice).Elem(), qual))
				continue
			}
			out = append(out, types.TypeString(typ, qual))
		}
		return out
	}
	s := "(" + strings.Join(list(sig.Params(), sig.Variadic()), ", ") + ")"
	switch res := list(sig.Results(), false); len(res) {
	case 0:
	case 1:
		s += " " + res[0]
	default:
		s += " (" + strings.Join(res, ", ") + ")"
	}
	return s
}
