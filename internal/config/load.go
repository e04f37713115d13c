package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/rekuiper/rekuiper/internal/guard"
	"github.com/rekuiper/rekuiper/internal/payload"
)

// BaseDirEnv is the environment variable naming the base folder, as in
// eKuiper.
const BaseDirEnv = "KuiperBaseKey"

// Paths are the folders of a running daemon.
type Paths struct {
	Base string // base folder; the others default to folders inside it
	Etc  string // configuration: kuiper.yaml, sources/, connections/, ...
	Data string // durable data: the catalog database, uploads, caches
	Log  string // log files
}

// ConfigFile returns the path of etc/kuiper.yaml.
func (p Paths) ConfigFile() string { return filepath.Join(p.Etc, "kuiper.yaml") }

// ClientFile returns the path of etc/client.yaml.
func (p Paths) ClientFile() string { return filepath.Join(p.Etc, "client.yaml") }

// ConnectionsFile returns the path of etc/connections/connection.yaml.
func (p Paths) ConnectionsFile() string {
	return filepath.Join(p.Etc, "connections", "connection.yaml")
}

// SourceConfFile returns the confKey file of a source type: etc/mqtt_source.yaml
// for mqtt (eKuiper keeps it at the etc root), etc/sources/<type>.yaml for the
// others. The type is encoded (guard.PathElem) so the file is always in
// etc/sources.
func (p Paths) SourceConfFile(typ string) string {
	if strings.EqualFold(typ, "mqtt") {
		return filepath.Join(p.Etc, "mqtt_source.yaml")
	}
	return filepath.Join(p.Etc, "sources", guard.PathElem(strings.ToLower(typ))+".yaml")
}

// SinkConfFile returns the resourceId profile file of a sink type:
// etc/sinks/<type>.yaml.
func (p Paths) SinkConfFile(typ string) string {
	return filepath.Join(p.Etc, "sinks", guard.PathElem(strings.ToLower(typ))+".yaml")
}

// Guard is the file and network guard c asks for: client-named files
// inside the data folder unless basic.allowExternalFileAccess, outbound
// HTTP to public addresses only unless basic.enablePrivateNet.
func (c *Config) Guard() *guard.Guard {
	return guard.New(guard.Policy{
		AllowExternalFiles: c.Basic.AllowExternalFileAccess,
		Roots:              []string{c.Paths.Data},
		AllowPrivateNet:    c.Basic.EnablePrivateNet,
	})
}

// SqlitePath returns the catalog database file for cfg: data/<store.sqlite.name>,
// data/sqliteKV.db when the name is empty.
func (c *Config) SqlitePath() string {
	name := c.Store.Sqlite.Name
	if name == "" {
		name = DefaultSqliteName
	}
	return filepath.Join(c.Paths.Data, name)
}

// LoadOptions tell Load where to look. Empty fields take their defaults.
type LoadOptions struct {
	// BaseDir is the base folder. Empty means the KuiperBaseKey variable of
	// Environ, or the current folder when that is unset.
	BaseDir string
	// EtcDir, DataDir and LogDir override <base>/etc, <base>/data and
	// <base>/log (the daemon's -etc, -data and -log flags).
	EtcDir  string
	DataDir string
	LogDir  string
	// Environ is the environment as "KEY=value" strings (os.Environ()).
	Environ []string
}

// ResolvePaths applies the folder rules of LoadOptions.
func ResolvePaths(opts LoadOptions) Paths {
	base := opts.BaseDir
	if base == "" {
		base = lookupEnv(opts.Environ, BaseDirEnv)
	}
	if base == "" {
		base = "."
	}
	p := Paths{Base: base, Etc: opts.EtcDir, Data: opts.DataDir, Log: opts.LogDir}
	if p.Etc == "" {
		p.Etc = filepath.Join(base, "etc")
	}
	if p.Data == "" {
		p.Data = filepath.Join(base, "data")
	}
	if p.Log == "" {
		p.Log = filepath.Join(base, "log")
	}
	return p
}

// Load resolves the folders, reads <etc>/kuiper.yaml over the defaults,
// applies KUIPER__SECTION__KEY overrides from opts.Environ and validates the
// result. A missing kuiper.yaml is not an error (defaults apply, with a
// warning). Bad YAML is an error naming the file and line; a key of the file
// that names no setting is an error naming file:line, and an override that
// names no setting or whose value does not fit the key's type is one naming
// the variable, each with the closest known key when one is close; all of
// them are reported in one error.
func Load(opts LoadOptions) (*Config, error) {
	cfg := Default()
	cfg.Paths = ResolvePaths(opts)
	file := cfg.Paths.ConfigFile()
	missing, err := decodeFileAndEnv(file, cfg, "KUIPER", opts.Environ)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	if missing {
		cfg.Warnings = append(cfg.Warnings, fmt.Sprintf("%s not found, using defaults", file))
	}
	warns, err := cfg.Validate()
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	cfg.Warnings = append(cfg.Warnings, warns...)
	cfg.Environ = opts.Environ
	return cfg, nil
}

// decodeFileAndEnv decodes file over the values already in dst (a pointer
// to a struct), unless it does not exist (missing), then applies the
// environment overrides <prefix>__KEY[__SUB]. Keys that name no field of
// dst, in the file or the environment, are errors; the error reports every
// problem of the file and of the environment.
func decodeFileAndEnv(file string, dst any, prefix string, environ []string) (missing bool, err error) {
	known := knownKeys(structType(dst))
	var fileErr error
	data, err := os.ReadFile(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		missing = true
	case err != nil:
		return false, err
	default:
		fileErr = decodeInto(file, data, dst, known)
	}
	if err := errors.Join(fileErr, applyEnvToStruct(dst, prefix, environ, known)); err != nil {
		return false, err
	}
	return missing, nil
}

// decodeInto decodes YAML data over the values already in dst (a pointer to
// a struct), matching keys case-insensitively; a key that names no field is
// an error naming file:line and the closest of known.
func decodeInto(file string, data []byte, dst any, known []string) error {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return fmt.Errorf("parse %s: %w", file, err)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil // empty or comments only
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return fmt.Errorf("parse %s: line %d: top level must be a mapping", file, doc.Line)
	}
	errs := canonicalizeKeys(doc, structType(dst), "", file, known)
	if err := doc.Decode(dst); err != nil {
		errs = append(errs, fmt.Errorf("parse %s: %w", file, err))
	}
	return errors.Join(errs...)
}

// Validate checks ranges and enumerations. It returns warnings for values
// it adjusted (as eKuiper does) and an error for values it cannot use.
func (c *Config) Validate() ([]string, error) {
	var warns []string
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	switch strings.ToLower(c.Basic.LogLevel) {
	case "debug", "info", "warn", "warning", "error", "fatal", "panic", "trace":
	default:
		bad("basic.logLevel %q: want debug, info, warn, error, fatal or panic", c.Basic.LogLevel)
	}
	for _, p := range []struct {
		key  string
		port int
	}{
		{"basic.port", c.Basic.Port}, {"basic.restPort", c.Basic.RestPort},
		{"basic.prometheusPort", c.Basic.PrometheusPort}, {"basic.pprofPort", c.Basic.PprofPort},
		{"source.httpServerPort", c.Source.HTTPServerPort},
	} {
		if p.port < 0 || p.port > 65535 {
			bad("%s %d: out of range 0-65535", p.key, p.port)
		}
	}
	if c.Basic.Timezone != "" {
		if _, err := time.LoadLocation(c.Basic.Timezone); err != nil {
			bad("basic.timezone %q: %w", c.Basic.Timezone, err)
		}
	}
	if c.Basic.RulePatrolInterval.Std() < time.Second {
		warns = append(warns, fmt.Sprintf("basic.rulePatrolInterval %s is below the minimum, using 1s", c.Basic.RulePatrolInterval))
		c.Basic.RulePatrolInterval = Duration(time.Second)
	}
	if n, err := ParseByteSize(c.Basic.MemoryLimit); err != nil {
		bad("basic.memoryLimit: %w", err)
	} else if n != 0 && n < MinMemoryLimit {
		bad("basic.memoryLimit %q: must be at least %d bytes (16MiB)", c.Basic.MemoryLimit, MinMemoryLimit)
	} else {
		c.Basic.MemoryLimitBytes = n
	}
	if _, err := payload.ParseAESKey(c.Basic.AESKey); err != nil {
		bad("%w", err)
	}
	// The bound matches jsudf.MaxTimeout: a call blocks its rule that long.
	if t := c.Basic.JSFunctionTimeout.Std(); t <= 0 || t > 10*time.Second {
		bad("basic.jsFunctionTimeout %s: must be more than 0 and at most 10s", c.Basic.JSFunctionTimeout)
	}
	if c.Basic.GracefulShutdownTimeout < 0 {
		bad("basic.gracefulShutdownTimeout %s: must not be negative", c.Basic.GracefulShutdownTimeout)
	}
	if c.Basic.RotateTime < 0 || c.Basic.MaxAge < 0 || c.Basic.RotateSize < 0 || c.Basic.RotateCount < 0 {
		bad("basic log rotation settings must not be negative")
	}
	if err := c.Basic.Catalog.validate(); err != nil {
		errs = append(errs, err)
	}
	if t := c.Cluster.LeaseTime.Std(); t < MinLeaseTime || t > MaxLeaseTime {
		bad("cluster.leaseTime %s: must be at least %s and at most %s", c.Cluster.LeaseTime, MinLeaseTime, Duration(MaxLeaseTime))
	}
	errs = append(errs, c.validateSecurity()...)
	errs = append(errs, c.Rule.validate("rule")...)
	errs = append(errs, c.unsupported()...)
	errs = append(errs, c.Sink.validate("sink")...)
	errs = append(errs, c.OpenTelemetry.validate()...)
	errs = append(errs, c.Limits.validate()...)
	for _, s := range []struct{ key, typ string }{{"store.type", c.Store.Type}, {"store.extStateType", c.Store.ExtStateType}} {
		if !strings.EqualFold(s.typ, "sqlite") {
			bad("%s %q: only sqlite is supported", s.key, s.typ)
		}
	}
	if strings.ContainsAny(c.Store.Sqlite.Name, `/\`) {
		bad("store.sqlite.name %q: must be a file name, not a path", c.Store.Sqlite.Name)
	}
	return warns, errors.Join(errs...)
}

func (r RuleOptions) validate(prefix string) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(prefix+"."+format, args...)) }
	if r.LateTolerance < 0 {
		bad("lateTolerance %s: must not be negative", r.LateTolerance)
	}
	if r.Concurrency < 0 {
		bad("concurrency %d: must not be negative", r.Concurrency)
	}
	if r.BufferLength < 0 {
		bad("bufferLength %d: must not be negative", r.BufferLength)
	}
	if r.Qos < 0 || r.Qos > 2 {
		bad("qos %d: want 0, 1 or 2", r.Qos)
	}
	if r.CheckpointInterval < 0 {
		bad("checkpointInterval %s: must not be negative", r.CheckpointInterval)
	}
	rs := r.RestartStrategy
	if rs.Attempts < 0 || rs.Delay < 0 || rs.MaxDelay < 0 || rs.Multiplier < 0 || rs.JitterFactor < 0 || rs.JitterFactor > 1 {
		bad("restartStrategy: attempts, delay, multiplier and maxDelay must not be negative, jitterFactor must be in [0,1]")
	}
	if r.Duration < 0 {
		bad("duration %s: must not be negative", r.Duration)
	}
	if r.Cron != "" && r.Duration == 0 {
		bad("cron %q: needs a duration", r.Cron)
	}
	return errs
}

func (s SinkDefaults) validate(prefix string) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(prefix+"."+format, args...)) }
	if s.MemoryCacheThreshold < 0 {
		bad("memoryCacheThreshold %d: must not be negative", s.MemoryCacheThreshold)
	}
	if s.MaxDiskCache < 0 {
		bad("maxDiskCache %d: must not be negative", s.MaxDiskCache)
	}
	if s.BufferPageSize <= 0 {
		bad("bufferPageSize %d: must be positive", s.BufferPageSize)
	}
	if s.ResendInterval < 0 {
		bad("resendInterval %s: must not be negative", s.ResendInterval)
	}
	if s.ResendPriority < -1 || s.ResendPriority > 1 {
		bad("resendPriority %d: want -1, 0 or 1", s.ResendPriority)
	}
	return errs
}

// ClientConfig is etc/client.yaml: where the CLI finds the daemon.
type ClientConfig struct {
	Basic ClientBasic `yaml:"basic" json:"basic"`
}

// ClientBasic is the `basic:` section of etc/client.yaml.
type ClientBasic struct {
	Host string `yaml:"host" json:"host"`
	Port int    `yaml:"port" json:"port"`
}

// LoadClient reads etc/client.yaml (defaults 127.0.0.1:9081 when missing)
// and applies CLIENT__BASIC__HOST / CLIENT__BASIC__PORT style overrides.
// As for kuiper.yaml, a key or variable that names no setting is an error:
// a typo'd host must not send the CLI's commands to another daemon. There
// are no warnings (the result is kept for callers).
func LoadClient(file string, environ []string) (*ClientConfig, []string, error) {
	cfg := &ClientConfig{Basic: ClientBasic{Host: "127.0.0.1", Port: 9081}}
	if _, err := decodeFileAndEnv(file, cfg, filePrefix(file), environ); err != nil {
		return nil, nil, fmt.Errorf("load client config: %w", err)
	}
	return cfg, nil, nil
}

// filePrefix is the environment prefix of a YAML file: its upper-cased base
// name without extension (mqtt_source.yaml → MQTT_SOURCE).
func filePrefix(file string) string {
	base := filepath.Base(file)
	return strings.ToUpper(strings.TrimSuffix(base, filepath.Ext(base)))
}

func lookupEnv(environ []string, key string) string {
	val := ""
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			val = v // the last one wins, as in a shell
		}
	}
	return val
}
