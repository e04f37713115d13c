// Command casedoc writes docs/compatibility-cases.md, the generated
// appendix of docs/compatibility.md. It reads the conformance corpus
// (internal/conformance/testdata) and the compatibility notes, and lists:
// how many cases each corpus folder holds; every corpus case the notes name
// in back-quotes, under the first section that names it, with its rule and
// what the case records about eKuiper; and the cases with a recorded
// eKuiper quirk that the notes do not name, which rekuiper must reproduce.
//
// From the repository root:
//
//	go run ./internal/conformance/cmd/casedoc
//
// or `go generate ./internal/conformance/cmd/casedoc`. Its test fails when
// the checked-in appendix differs from what it writes.
package main

//go:generate go run . -root ../../../..

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// Paths inside the repository.
const (
	corpusPath   = "internal/conformance/testdata"
	compatPath   = "docs/compatibility.md"
	appendixPath = "docs/compatibility-cases.md"
)

func main() {
	root := flag.String("root", ".", "the repository's root folder")
	flag.Parse()
	if err := run(*root); err != nil {
		fmt.Fprintf(os.Stderr, "casedoc: %v\n", err)
		os.Exit(1)
	}
}

// run renders the appendix of the repository at root and writes it.
func run(root string) error {
	out, err := render(filepath.Join(root, corpusPath), filepath.Join(root, compatPath))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, appendixPath), out, 0o644); err != nil {
		return fmt.Errorf("write the appendix: %w", err)
	}
	return nil
}
