package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/rekuiper/rekuiper/internal/procs"
	"github.com/rekuiper/rekuiper/qualify"
)

// EKuiper is an eKuiper v2 installation the MQTT scenarios can run
// against instead of rekuiper, for a comparison: the same broker,
// publisher, subscriber, stream, rules and accounting, another daemon.
type EKuiper struct {
	Bin string // its kuiperd
	// Etc is its etc folder (kuiper.yaml, mqtt_source.yaml, sources/, …),
	// copied into every run folder before the run's own files.
	Etc string
}

// FindEKuiper locates eKuiper's kuiperd and etc folder from path: either
// the kuiperd binary, with etc/ in its folder or the folder above (as in
// an installation's bin/kuiperd), or a folder holding etc/ and kuiperd
// or bin/kuiperd (an installation, e.g. the _build/kuiper-…/ folder of
// eKuiper's make).
func FindEKuiper(path string) (EKuiper, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return EKuiper{}, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return EKuiper{}, fmt.Errorf("eKuiper: %w", err)
	}
	var bin string
	var etcs []string
	if fi.IsDir() {
		for _, c := range []string{filepath.Join(abs, "bin", "kuiperd"), filepath.Join(abs, "kuiperd")} {
			if isFile(c) {
				bin = c
				break
			}
		}
		if bin == "" {
			return EKuiper{}, fmt.Errorf("eKuiper: no kuiperd or bin/kuiperd in %s", abs)
		}
		etcs = []string{filepath.Join(abs, "etc")}
	} else {
		bin = abs
		etcs = []string{filepath.Join(filepath.Dir(abs), "etc"), filepath.Join(filepath.Dir(filepath.Dir(abs)), "etc")}
	}
	for _, etc := range etcs {
		if isFile(filepath.Join(etc, "kuiper.yaml")) {
			return EKuiper{Bin: bin, Etc: etc}, nil
		}
	}
	return EKuiper{}, fmt.Errorf("eKuiper: no etc/kuiper.yaml at %v (copy eKuiper's etc folder next to its kuiperd)", etcs)
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// ekuiperPlugins are the plugin folders eKuiper's kuiperd expects at
// start (it exits without plugins/sources).
var ekuiperPlugins = []string{"sources", "sinks", "functions", "portable", "wasm"}

// NewEKuiperDaemon prepares the folders of an eKuiper daemon in dir:
// ek.Etc copied to dir/etc, then etcFiles written over it (name →
// content), and empty data/, log/ and plugins/ folders.
func NewEKuiperDaemon(ek EKuiper, dir string, etcFiles map[string]string) (*Daemon, error) {
	if err := qualify.CopyTree(ek.Etc, filepath.Join(dir, "etc")); err != nil {
		return nil, fmt.Errorf("copy eKuiper's etc: %w", err)
	}
	dirs := []string{"data", "log"}
	for _, p := range ekuiperPlugins {
		dirs = append(dirs, filepath.Join("plugins", p))
	}
	for _, sub := range dirs {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("prepare daemon folder: %w", err)
		}
	}
	for name, content := range etcFiles {
		if err := os.WriteFile(filepath.Join(dir, "etc", name), []byte(content), 0o644); err != nil {
			return nil, fmt.Errorf("write etc/%s: %w", name, err)
		}
	}
	var ports [3]int
	for i := range ports {
		p, err := procs.FreePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	return &Daemon{Bin: ek.Bin, Dir: dir, Port: ports[0], EKuiper: true, RPCPort: ports[1], HTTPPort: ports[2]}, nil
}

// ekuiperEnv is the environment of an eKuiper daemon (before d.Env): its
// base folder (etc/, data/, log/, plugins/ are found there), the REST
// and CLI ports on loopback, the HTTP push server on its own port, the
// log settings the rekuiper runs use, and its profiler off (the
// installation's kuiper.yaml starts one on port 6060) unless d.Env turns
// it on.
func ekuiperEnv(d *Daemon) []string {
	return []string{
		"KuiperBaseKey=" + d.Dir,
		"KUIPER__BASIC__RESTPORT=" + strconv.Itoa(d.Port),
		"KUIPER__BASIC__RESTIP=127.0.0.1",
		"KUIPER__BASIC__PORT=" + strconv.Itoa(d.RPCPort),
		"KUIPER__BASIC__IP=127.0.0.1",
		"KUIPER__BASIC__AUTHENTICATION=false",
		"KUIPER__BASIC__PROMETHEUS=false",
		"KUIPER__BASIC__PPROF=false",
		"KUIPER__SOURCE__HTTPSERVERIP=127.0.0.1",
		"KUIPER__SOURCE__HTTPSERVERPORT=" + strconv.Itoa(d.HTTPPort),
		"KUIPER__BASIC__CONSOLELOG=false",
		"KUIPER__BASIC__FILELOG=true",
		"KUIPER__BASIC__LOGLEVEL=warn",
	}
}

// errEKuiperReadPace refuses a rekuiper-only source property.
var errEKuiperReadPace = errors.New("readPace is a rekuiper source property; eKuiper has none")
