// Command sbom writes a CycloneDX 1.5 JSON software bill of materials for
// Go binaries, from the build info the Go toolchain embeds in them (what
// `go version -m` prints): the main module, every dependency module with
// its version and checksum, the Go toolchain and the build settings.
// scripts/release.sh runs it for each release archive.
//
//	go run ./scripts/sbom -name rekuiper -version v2.1.0 dist/kuiperd dist/kuiper > sbom.json
package main

import (
	"crypto/rand"
	"debug/buildinfo"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"time"
)

func main() {
	name := flag.String("name", "rekuiper", "name of the described release")
	ver := flag.String("version", "", "version of the described release")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: sbom [-name N] [-version V] binary...")
		os.Exit(2)
	}
	bom, err := build(*name, *ver, flag.Args(), time.Now().UTC())
	if err == nil {
		err = write(os.Stdout, bom)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sbom: %v\n", err)
		os.Exit(1)
	}
}

// BOM is the subset of CycloneDX 1.5 this tool writes.
type BOM struct {
	BOMFormat    string      `json:"bomFormat"`
	SpecVersion  string      `json:"specVersion"`
	SerialNumber string      `json:"serialNumber"`
	Version      int         `json:"version"`
	Metadata     Metadata    `json:"metadata"`
	Components   []Component `json:"components"`
}

// Metadata describes the release itself.
type Metadata struct {
	Timestamp string    `json:"timestamp"`
	Component Component `json:"component"`
}

// Component is one binary or Go module.
type Component struct {
	Type       string     `json:"type"`
	BOMRef     string     `json:"bom-ref"`
	Name       string     `json:"name"`
	Version    string     `json:"version,omitempty"`
	PURL       string     `json:"purl,omitempty"`
	Hashes     []Hash     `json:"hashes,omitempty"`
	Properties []Property `json:"properties,omitempty"`
}

// Hash is a module checksum.
type Hash struct {
	Alg     string `json:"alg"`
	Content string `json:"content"`
}

// Property is a name/value pair (build settings, toolchain).
type Property struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func build(name, ver string, binaries []string, now time.Time) (*BOM, error) {
	serial := make([]byte, 16)
	rand.Read(serial) //nolint:errcheck // never fails
	bom := &BOM{
		BOMFormat: "CycloneDX", SpecVersion: "1.5", Version: 1,
		SerialNumber: "urn:uuid:" + uuid(serial),
		Metadata: Metadata{
			Timestamp: now.Format(time.RFC3339),
			Component: Component{Type: "application", BOMRef: name, Name: name, Version: ver},
		},
	}
	mods := map[string]Component{}
	for _, bin := range binaries {
		bi, err := buildinfo.ReadFile(bin)
		if err != nil {
			return nil, fmt.Errorf("read build info of %s: %w", bin, err)
		}
		props := []Property{{Name: "go:toolchain", Value: bi.GoVersion}, {Name: "go:main", Value: bi.Path}}
		for _, s := range bi.Settings {
			props = append(props, Property{Name: "go:build:" + s.Key, Value: s.Value})
		}
		base := filepath.Base(bin)
		bom.Components = append(bom.Components, Component{
			Type: "application", BOMRef: "bin:" + base, Name: base, Version: ver, Properties: props,
		})
		for _, d := range bi.Deps {
			c := module(d)
			mods[c.BOMRef] = c
		}
	}
	keys := make([]string, 0, len(mods))
	for k := range mods {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		bom.Components = append(bom.Components, mods[k])
	}
	return bom, nil
}

// module describes a dependency, after its replacement if any.
func module(d *debug.Module) Component {
	m := d
	if d.Replace != nil {
		m = d.Replace
	}
	c := Component{Type: "library", Name: m.Path, Version: m.Version}
	c.PURL = "pkg:golang/" + m.Path
	if m.Version != "" {
		c.PURL += "@" + m.Version
	}
	c.BOMRef = c.PURL
	if h, ok := strings.CutPrefix(m.Sum, "h1:"); ok {
		if b, err := base64.StdEncoding.DecodeString(h); err == nil {
			c.Hashes = []Hash{{Alg: "SHA-256", Content: hex.EncodeToString(b)}}
		}
	}
	if d.Replace != nil {
		c.Properties = []Property{{Name: "go:replaces", Value: d.Path + "@" + d.Version}}
	}
	return c
}

func uuid(b []byte) string {
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func write(w io.Writer, bom *BOM) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(bom)
}
