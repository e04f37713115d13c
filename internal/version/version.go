// Package version reports which rekuiper a binary was built from: the
// module version and the VCS commit, read from the Go build info, or set at
// link time for release builds:
//
//	go build -ldflags "-X github.com/rekuiper/rekuiper/internal/version.stamped=v2.1.0 \
//	    -X github.com/rekuiper/rekuiper/internal/version.stampedCommit=abc123" ./cmd/kuiperd
//
// kuiperd -version, kuiper version and GET / all print what Get returns.
package version

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Module is rekuiper's module path.
const Module = "github.com/rekuiper/rekuiper"

// Set by the linker only (-ldflags -X); never written at run time.
var (
	stamped       string
	stampedCommit string
)

// Info describes the build of the running binary.
type Info struct {
	// Version is the release tag (v2.1.0), a module pseudo-version, or
	// "dev" for a build from a work tree without a tag.
	Version string
	// Commit is the VCS revision ("" when unknown), with "-dirty" appended
	// when the work tree had local changes.
	Commit string
	// Time is the commit time in RFC 3339 ("" when unknown).
	Time string
	// GoVersion is the toolchain that built the binary.
	GoVersion string
}

// String is "<version> (commit <commit>, <go version>)".
func (i Info) String() string {
	c := i.Commit
	if c == "" {
		c = "unknown"
	}
	return fmt.Sprintf("%s (commit %s, %s)", i.Version, c, i.GoVersion)
}

// Get returns the build's version. Link-time stamps win; otherwise the
// build info of rekuiper's module is used: the main module when built in
// this repository, the dependency when built as a custom daemon by
// `kuiper build` or from another module's main.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuildInfo(bi, stamped, stampedCommit)
}

func fromBuildInfo(bi *debug.BuildInfo, ver, commit string) Info {
	info := Info{Version: ver, Commit: commit}
	if bi == nil {
		if info.Version == "" {
			info.Version = "dev"
		}
		return info
	}
	info.GoVersion = bi.GoVersion
	var mod *debug.Module
	if bi.Main.Path == Module {
		mod = &bi.Main
		var modified bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if info.Commit == "" {
					info.Commit = s.Value
				}
			case "vcs.time":
				info.Time = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if modified && commit == "" && info.Commit != "" {
			info.Commit += "-dirty"
		}
	} else {
		for _, d := range bi.Deps {
			if d.Path == Module {
				mod = d
				if d.Replace != nil && d.Replace.Version != "" {
					mod = d.Replace
				}
				break
			}
		}
	}
	if info.Version == "" && mod != nil && mod.Version != "" && mod.Version != "(devel)" {
		info.Version = mod.Version
		if info.Commit == "" {
			info.Commit = pseudoCommit(mod.Version)
		}
	}
	if info.Version == "" {
		info.Version = "dev"
	}
	return info
}

// pseudoCommit returns the revision prefix a pseudo-version ends with
// (v0.0.0-20261201120000-abcdef123456), or "".
func pseudoCommit(v string) string {
	v, _, _ = strings.Cut(v, "+")
	i := strings.LastIndexByte(v, '-')
	if i < 0 || len(v)-i-1 != 12 {
		return ""
	}
	rev := v[i+1:]
	for _, c := range rev {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return ""
		}
	}
	if !strings.Contains(v[:i], "-") && !strings.Contains(v[:i], ".0.") {
		return ""
	}
	return rev
}
