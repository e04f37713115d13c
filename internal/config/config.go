// Package config loads the daemon configuration (etc/kuiper.yaml) and the
// confKey files of sources, sinks and connections, with eKuiper's keys,
// defaults and KUIPER__SECTION__KEY environment overrides.
//
// Nothing here reads the process environment or holds global state: callers
// pass the environment in LoadOptions.Environ and own the returned values.
package config

import "time"

// Config is the content of etc/kuiper.yaml after defaults, the file and the
// environment overrides have been applied, in that order.
type Config struct {
	// Environ is the environment the configuration was loaded with; source
	// and sink confKey files apply their overrides from it too.
	Environ       []string      `yaml:"-" json:"-"`
	Basic         Basic         `yaml:"basic" json:"basic"`
	Rule          RuleOptions   `yaml:"rule" json:"rule"`
	Sink          SinkDefaults  `yaml:"sink" json:"sink"`
	Source        SourceConfig  `yaml:"source" json:"source"`
	Store         StoreConfig   `yaml:"store" json:"store"`
	Portable      Portable      `yaml:"portable" json:"portable"`
	OpenTelemetry OpenTelemetry `yaml:"openTelemetry" json:"openTelemetry"`
	Connection    Connection    `yaml:"connection" json:"connection"`
	Cluster       Cluster       `yaml:"cluster" json:"cluster"`
	// Limits caps what network clients may hold open (a rekuiper section).
	Limits Limits `yaml:"limits" json:"limits"`
	// Security is kept as free-form properties (TLS and decryption options);
	// no component of the engine reads it yet.
	Security map[string]any `yaml:"security" json:"security,omitempty"`
	Hack     Hack           `yaml:"hack" json:"hack"`

	// Paths are the folders the daemon uses, resolved by Load.
	Paths Paths `yaml:"-" json:"-"`
	// Warnings lists what Load accepted but adjusted or fell back on: a
	// missing kuiper.yaml, values raised to their minimum. (Keys that name
	// no setting are errors, not warnings.)
	Warnings []string `yaml:"-" json:"-"`
}

// Basic is the `basic:` section.
type Basic struct {
	LogLevel                string         `yaml:"logLevel" json:"logLevel"`
	Debug                   bool           `yaml:"debug" json:"debug"`
	ConsoleLog              bool           `yaml:"consoleLog" json:"consoleLog"`
	FileLog                 bool           `yaml:"fileLog" json:"fileLog"`
	LogDisableTimestamp     bool           `yaml:"logDisableTimestamp" json:"logDisableTimestamp"`
	Syslog                  Syslog         `yaml:"syslog" json:"syslog"`
	RotateTime              int            `yaml:"rotateTime" json:"rotateTime"` // hours
	MaxAge                  int            `yaml:"maxAge" json:"maxAge"`         // hours
	RotateSize              int64          `yaml:"rotateSize" json:"rotateSize"` // bytes
	RotateCount             int            `yaml:"rotateCount" json:"rotateCount"`
	IP                      string         `yaml:"ip" json:"ip"`
	Port                    int            `yaml:"port" json:"port"`
	RestIP                  string         `yaml:"restIp" json:"restIp"`
	RestPort                int            `yaml:"restPort" json:"restPort"`
	RestTLS                 TLSFiles       `yaml:"restTls" json:"restTls"`
	Timezone                string         `yaml:"timezone" json:"timezone"`
	Authentication          bool           `yaml:"authentication" json:"authentication"`
	Prometheus              bool           `yaml:"prometheus" json:"prometheus"`
	PrometheusPort          int            `yaml:"prometheusPort" json:"prometheusPort"`
	Pprof                   bool           `yaml:"pprof" json:"pprof"`
	PprofIP                 string         `yaml:"pprofIp" json:"pprofIp"`
	PprofPort               int            `yaml:"pprofPort" json:"pprofPort"`
	PluginHosts             string         `yaml:"pluginHosts" json:"pluginHosts"`
	IgnoreCase              bool           `yaml:"ignoreCase" json:"ignoreCase"`
	SQL                     SQLConf        `yaml:"sql" json:"sql"`
	RulePatrolInterval      Duration       `yaml:"rulePatrolInterval" json:"rulePatrolInterval"`
	EnableOpenZiti          bool           `yaml:"enableOpenZiti" json:"enableOpenZiti"`
	AESKey                  string         `yaml:"aesKey" json:"-"`
	GracefulShutdownTimeout Duration       `yaml:"gracefulShutdownTimeout" json:"gracefulShutdownTimeout"`
	ResourceProfileConfig   ResourceProf   `yaml:"resourceProfileConfig" json:"resourceProfileConfig"`
	MetricsDumpConfig       MetricsDump    `yaml:"metricsDumpConfig" json:"metricsDumpConfig"`
	EnableRestAuditLog      bool           `yaml:"enableRestAuditLog" json:"enableRestAuditLog"`
	EnablePrivateNet        bool           `yaml:"enablePrivateNet" json:"enablePrivateNet"`
	AllowExternalFileAccess bool           `yaml:"allowExternalFileAccess" json:"allowExternalFileAccess"`
	CORS                    []string       `yaml:"cors" json:"cors,omitempty"`
	Connection              map[string]any `yaml:"connection" json:"connection,omitempty"`
	// MemoryLimit is a soft memory limit for the Go runtime (bytes, or an
	// integer with a unit: "512MiB"); empty for none. The GOMEMLIMIT
	// environment variable, when set, wins. A rekuiper extension.
	MemoryLimit string `yaml:"memoryLimit" json:"memoryLimit,omitempty"`
	// MemoryLimitBytes is MemoryLimit parsed by Validate.
	MemoryLimitBytes int64 `yaml:"-" json:"-"`
	// JSFunctionTimeout bounds one call of a JavaScript function (and the
	// run of its script's top level); the call is then interrupted and the
	// row gets an error. A rekuiper extension; at most 10s.
	JSFunctionTimeout Duration `yaml:"jsFunctionTimeout" json:"jsFunctionTimeout"`
	// Catalog selects the catalog database (see CatalogURL); empty keeps
	// the embedded SQLite file. A rekuiper extension.
	Catalog CatalogURL `yaml:"catalog" json:"catalog,omitempty"`
}

// Syslog is `basic.syslog`.
type Syslog struct {
	Enable  bool   `yaml:"enable" json:"enable"`
	Network string `yaml:"network" json:"network"`
	Address string `yaml:"address" json:"address"`
	Level   string `yaml:"level" json:"level"`
	Tag     string `yaml:"tag" json:"tag"`
}

// TLSFiles names a certificate and key file; both empty means no TLS.
type TLSFiles struct {
	Certfile string `yaml:"certfile" json:"certfile"`
	Keyfile  string `yaml:"keyfile" json:"keyfile"`
}

// SQLConf is `basic.sql`.
type SQLConf struct {
	// MaxConnections caps each driver+DSN pool; 0 means unlimited.
	MaxConnections int `yaml:"maxConnections" json:"maxConnections"`
}

// ResourceProf is `basic.resourceProfileConfig`.
type ResourceProf struct {
	Enable   bool     `yaml:"enable" json:"enable"`
	Interval Duration `yaml:"interval" json:"interval"`
}

// MetricsDump is `basic.metricsDumpConfig`.
type MetricsDump struct {
	Enable           bool     `yaml:"enable" json:"enable"`
	RetainedDuration Duration `yaml:"retainedDuration" json:"retainedDuration"`
}

// RuleOptions is the `rule:` section: the global defaults of rule options.
// Which of them a rule inherits is decided by the rule loader, not here.
type RuleOptions struct {
	Debug                     bool                 `yaml:"debug" json:"debug"`
	LogFilename               string               `yaml:"logFilename" json:"logFilename"`
	IsEventTime               bool                 `yaml:"isEventTime" json:"isEventTime"`
	LateTolerance             Duration             `yaml:"lateTolerance" json:"lateTolerance"`
	Concurrency               int                  `yaml:"concurrency" json:"concurrency"`
	BufferLength              int                  `yaml:"bufferLength" json:"bufferLength"`
	SendMetaToSink            bool                 `yaml:"sendMetaToSink" json:"sendMetaToSink"`
	SendNilField              bool                 `yaml:"sendNilField" json:"sendNilField"`
	SendError                 bool                 `yaml:"sendError" json:"sendError"`
	Qos                       int                  `yaml:"qos" json:"qos"`
	CheckpointInterval        Duration             `yaml:"checkpointInterval" json:"checkpointInterval"`
	RestartStrategy           RestartStrategy      `yaml:"restartStrategy" json:"restartStrategy"`
	Cron                      string               `yaml:"cron" json:"cron"`
	Duration                  Duration             `yaml:"duration" json:"duration"`
	CronDatetimeRange         []DatetimeRange      `yaml:"cronDatetimeRange" json:"cronDatetimeRange,omitempty"`
	PlanOptimizeStrategy      PlanOptimizeStrategy `yaml:"planOptimizeStrategy" json:"planOptimizeStrategy"`
	NotifySub                 bool                 `yaml:"notifySub" json:"notifySub"`
	DisableBufferFullDiscard  bool                 `yaml:"disableBufferFullDiscard" json:"disableBufferFullDiscard"`
	EnableSaveStateBeforeStop bool                 `yaml:"enableSaveStateBeforeStop" json:"enableSaveStateBeforeStop"`
	ForceExitTimeout          Duration             `yaml:"forceExitTimeout" json:"forceExitTimeout"`
	Experiment                Experiment           `yaml:"experiment" json:"experiment"`
}

// RestartStrategy is `rule.restartStrategy`. eKuiper v2 reads only Attempts;
// the backoff fields are eKuiper v1's and are kept for the restart policy.
type RestartStrategy struct {
	Attempts     int      `yaml:"attempts" json:"attempts"`
	Delay        Duration `yaml:"delay" json:"delay"`
	Multiplier   float64  `yaml:"multiplier" json:"multiplier"`
	MaxDelay     Duration `yaml:"maxDelay" json:"maxDelay"`
	JitterFactor float64  `yaml:"jitterFactor" json:"jitterFactor"`
}

// DatetimeRange is one entry of `cronDatetimeRange`: either Begin/End as
// "YYYY-MM-DD hh:mm:ss" or BeginTimestamp/EndTimestamp in milliseconds.
type DatetimeRange struct {
	Begin          string `yaml:"begin" json:"begin,omitempty"`
	End            string `yaml:"end" json:"end,omitempty"`
	BeginTimestamp int64  `yaml:"beginTimestamp" json:"beginTimestamp,omitempty"`
	EndTimestamp   int64  `yaml:"endTimestamp" json:"endTimestamp,omitempty"`
}

// PlanOptimizeStrategy is `rule.planOptimizeStrategy`.
type PlanOptimizeStrategy struct {
	EnableIncrementalWindow bool            `yaml:"enableIncrementalWindow" json:"enableIncrementalWindow"`
	EnableAliasPushdown     bool            `yaml:"enableAliasPushdown" json:"enableAliasPushdown"`
	DisableAliasRefCal      bool            `yaml:"disableAliasRefCal" json:"disableAliasRefCal"`
	OptimizeControl         OptimizeControl `yaml:"optimizeControl" json:"optimizeControl"`
	WindowOption            WindowOption    `yaml:"windowOption" json:"windowOption"`
}

// OptimizeControl lists planner rules to switch off.
type OptimizeControl struct {
	DisableOptimizeRules []string `yaml:"disableOptimizeRules" json:"disableOptimizeRules,omitempty"`
}

// WindowOption holds window planner switches.
type WindowOption struct {
	EnableSendSlidingWindowTwice bool   `yaml:"enableSendSlidingWindowTwice" json:"enableSendSlidingWindowTwice"`
	WindowVersion                string `yaml:"windowVersion" json:"windowVersion"`
}

// Experiment holds experimental rule switches.
type Experiment struct {
	UseSliceTuple bool `yaml:"useSliceTuple" json:"useSliceTuple"`
}

// SinkDefaults is the `sink:` section: global defaults of the sink cache
// properties, overridden per action.
type SinkDefaults struct {
	EnableCache          bool     `yaml:"enableCache" json:"enableCache"`
	MemoryCacheThreshold int      `yaml:"memoryCacheThreshold" json:"memoryCacheThreshold"`
	MaxDiskCache         int      `yaml:"maxDiskCache" json:"maxDiskCache"`
	BufferPageSize       int      `yaml:"bufferPageSize" json:"bufferPageSize"`
	ResendInterval       Duration `yaml:"resendInterval" json:"resendInterval"`
	CleanCacheAtStop     bool     `yaml:"cleanCacheAtStop" json:"cleanCacheAtStop"`
	ResendAlterQueue     bool     `yaml:"resendAlterQueue" json:"resendAlterQueue"`
	ResendPriority       int      `yaml:"resendPriority" json:"resendPriority"`
	ResendIndicatorField string   `yaml:"resendIndicatorField" json:"resendIndicatorField"`
	ResendDestination    string   `yaml:"resendDestination" json:"resendDestination"`
}

// SourceConfig is the `source:` section: the shared HTTP server used by
// httppush, websocket server and SSE sources.
type SourceConfig struct {
	HTTPServerIP   string   `yaml:"httpServerIp" json:"httpServerIp"`
	HTTPServerPort int      `yaml:"httpServerPort" json:"httpServerPort"`
	HTTPServerTLS  TLSFiles `yaml:"httpServerTls" json:"httpServerTls"`
}

// StoreConfig is the `store:` section. Only the sqlite type is supported.
type StoreConfig struct {
	Type         string      `yaml:"type" json:"type"`
	ExtStateType string      `yaml:"extStateType" json:"extStateType"`
	Redis        RedisStore  `yaml:"redis" json:"redis"`
	Sqlite       SqliteStore `yaml:"sqlite" json:"sqlite"`
	Pebble       PebbleStore `yaml:"pebble" json:"pebble"`
	Fdb          FdbStore    `yaml:"fdb" json:"fdb"`
}

// RedisStore is `store.redis`; accepted for compatibility, not used.
type RedisStore struct {
	Host               string   `yaml:"host" json:"host"`
	Port               int      `yaml:"port" json:"port"`
	Password           string   `yaml:"password" json:"-"`
	Timeout            Duration `yaml:"timeout" json:"timeout"`
	ConnectionSelector string   `yaml:"connectionSelector" json:"connectionSelector"`
}

// SqliteStore is `store.sqlite`.
type SqliteStore struct {
	// Name is the database file name inside the data folder; empty means
	// sqliteKV.db.
	Name string `yaml:"name" json:"name"`
}

// PebbleStore is `store.pebble`; accepted for compatibility, not used.
type PebbleStore struct {
	Path string `yaml:"path" json:"path"`
	Name string `yaml:"name" json:"name"`
}

// FdbStore is `store.fdb`; accepted for compatibility, not used.
type FdbStore struct {
	Path string `yaml:"path" json:"path"`
}

// Portable is the `portable:` section (portable plugin runtime).
type Portable struct {
	PythonBin   string   `yaml:"pythonBin" json:"pythonBin"`
	InitTimeout Duration `yaml:"initTimeout" json:"initTimeout"`
	SendTimeout Duration `yaml:"sendTimeout" json:"sendTimeout"`
	RecvTimeout Duration `yaml:"recvTimeout" json:"recvTimeout"`
}

// OpenTelemetry is the `openTelemetry:` section (rule data tracing).
type OpenTelemetry struct {
	ServiceName           string `yaml:"serviceName" json:"serviceName"`
	EnableRemoteCollector bool   `yaml:"enableRemoteCollector" json:"enableRemoteCollector"`
	RemoteEndpoint        string `yaml:"remoteEndpoint" json:"remoteEndpoint"`
	LocalTraceCapacity    int    `yaml:"localTraceCapacity" json:"localTraceCapacity"`
	EnableLocalStorage    bool   `yaml:"enableLocalStorage" json:"enableLocalStorage"`
}

// Connection is the top-level `connection:` section.
type Connection struct {
	BackoffMaxElapsedDuration Duration `yaml:"backoffMaxElapsedDuration" json:"backoffMaxElapsedDuration"`
}

// Cluster is the `cluster:` section: how daemons sharing a PostgreSQL
// catalog (basic.catalog) place rules. It has no effect on a SQLite
// catalog.
type Cluster struct {
	// LeaseTime is how long a node's lease on a rule lasts without
	// renewal: a node renews every third of it, and a rule of a node that
	// died moves to another node once it ran out.
	LeaseTime Duration `yaml:"leaseTime" json:"leaseTime"`
}

// MinLeaseTime and MaxLeaseTime bound cluster.leaseTime.
const (
	MinLeaseTime = time.Second
	MaxLeaseTime = 10 * time.Minute
)

// Hack is the internal `hack:` section.
type Hack struct {
	Cold bool `yaml:"cold" json:"cold"`
}

// DefaultSqliteName is the catalog database file name when store.sqlite.name
// is empty.
const DefaultSqliteName = "sqliteKV.db"

// Default returns the configuration with eKuiper's defaults, as the shipped
// etc/kuiper.yaml sets them (where eKuiper's code fallback differs from its
// shipped file, the file wins: gracefulShutdownTimeout 10s), except that the
// REST API and the push endpoint server listen on loopback only, pprof is
// off, and allowExternalFileAccess is false in the code and the shipped file
// (eKuiper's file ships true): a client may name files outside the data
// folder only when the operator allows it.
func Default() *Config {
	return &Config{
		Basic: Basic{
			LogLevel:                "info",
			FileLog:                 true,
			Syslog:                  Syslog{Network: "udp", Level: "info", Tag: "kuiper"},
			RotateTime:              24,
			MaxAge:                  72,
			RotateSize:              10485760,
			RotateCount:             3,
			IP:                      "0.0.0.0",
			Port:                    20498,
			RestIP:                  "127.0.0.1",
			RestPort:                9081,
			Timezone:                "Local",
			PrometheusPort:          20499,
			PprofIP:                 "127.0.0.1",
			PprofPort:               6060,
			PluginHosts:             "https://packages.emqx.io",
			RulePatrolInterval:      Duration(10 * time.Second),
			GracefulShutdownTimeout: Duration(10 * time.Second),
			JSFunctionTimeout:       Duration(100 * time.Millisecond),
			ResourceProfileConfig:   ResourceProf{Interval: Duration(5 * time.Second)},
			MetricsDumpConfig:       MetricsDump{RetainedDuration: Duration(6 * time.Hour)},
		},
		Rule: RuleOptions{
			LateTolerance:      Duration(time.Second),
			Concurrency:        1,
			BufferLength:       1024,
			CheckpointInterval: Duration(5 * time.Minute),
			RestartStrategy: RestartStrategy{
				Delay:        Duration(time.Second),
				Multiplier:   2,
				MaxDelay:     Duration(30 * time.Second),
				JitterFactor: 0.1,
			},
			ForceExitTimeout: Duration(5 * time.Second),
		},
		Sink: SinkDefaults{
			MemoryCacheThreshold: 1024,
			MaxDiskCache:         1024000,
			BufferPageSize:       256,
		},
		Source: SourceConfig{HTTPServerIP: "127.0.0.1", HTTPServerPort: 10081},
		Store: StoreConfig{
			Type:         "sqlite",
			ExtStateType: "sqlite",
			Redis:        RedisStore{Host: "localhost", Port: 6379, Timeout: Duration(time.Second)},
		},
		Portable: Portable{
			PythonBin:   "python",
			InitTimeout: Duration(60 * time.Second),
			SendTimeout: Duration(5 * time.Second),
			RecvTimeout: Duration(5 * time.Second),
		},
		OpenTelemetry: OpenTelemetry{
			ServiceName:        "kuiperd-service",
			RemoteEndpoint:     "localhost:4318",
			LocalTraceCapacity: 2048,
		},
		Connection: Connection{BackoffMaxElapsedDuration: Duration(3 * time.Minute)},
		Cluster:    Cluster{LeaseTime: Duration(10 * time.Second)},
		Limits:     DefaultLimits(),
	}
}
