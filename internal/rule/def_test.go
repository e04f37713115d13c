package rule

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/config"
)

func TestParseDef(t *testing.T) {
	base := OptionsFromConfig(config.Default().Rule)
	tests := []struct {
		name    string
		in      string
		wantErr error
		errText string
		check   func(t *testing.T, d *Def)
	}{
		{name: "minimal", in: `{"id":"r1","sql":"SELECT * FROM demo","actions":[{"log":{}}]}`,
			check: func(t *testing.T, d *Def) {
				if !d.Triggered || d.Options.BufferLength != 1024 || d.Options.RestartStrategy.Delay != Duration(time.Second) {
					t.Fatalf("defaults not applied: %+v", d.Options)
				}
				if len(d.Actions) != 1 || d.Actions[0].Type != "log" {
					t.Fatalf("actions %+v", d.Actions)
				}
			}},
		{name: "all fields", in: `{"id":"r1","name":"n","sql":"SELECT 1 FROM s","actions":[{"mqtt":{"qos":1,"ratio":0.5}},{"log":null}],"options":{"qos":1,"bufferLength":5,"lateTolerance":"2s","restartStrategy":{"attempts":3,"delay":200}},"triggered":false,"tags":["a"],"version":"7"}`,
			check: func(t *testing.T, d *Def) {
				if d.Triggered || d.Name != "n" || d.Version != "7" || !reflect.DeepEqual(d.Tags, []string{"a"}) {
					t.Fatalf("fields %+v", d)
				}
				if d.Options.Qos != 1 || d.Options.BufferLength != 5 || d.Options.LateTolerance != Duration(2*time.Second) {
					t.Fatalf("options %+v", d.Options)
				}
				rs := d.Options.RestartStrategy
				if rs.Attempts != 3 || rs.Delay != Duration(200*time.Millisecond) || rs.Multiplier != 2 {
					t.Fatalf("restart strategy overlay %+v", rs)
				}
				if d.Actions[0].Props["qos"] != int64(1) || d.Actions[0].Props["ratio"] != 0.5 || d.Actions[1].Props == nil {
					t.Fatalf("props %+v", d.Actions)
				}
			}},
		{name: "empty", in: ` `, wantErr: ErrMalformed},
		{name: "syntax", in: `{"id":`, wantErr: ErrMalformed},
		{name: "array", in: `[]`, wantErr: ErrMalformed},
		{name: "null", in: `null`, wantErr: ErrMalformed},
		{name: "unknown field", in: `{"id":"r1","sqlx":"x"}`, wantErr: ErrMalformed, errText: `unknown field "sqlx"`},
		{name: "unknown option", in: `{"id":"r1","sql":"s","actions":[{"log":{}}],"options":{"bogus":1}}`, wantErr: ErrMalformed, errText: "bogus"},
		{name: "wrong type", in: `{"id":1}`, wantErr: ErrMalformed, errText: `field "id"`},
		{name: "action not object", in: `{"id":"r","sql":"s","actions":[1]}`, wantErr: ErrMalformed, errText: "actions[0]"},
		{name: "action props not object", in: `{"id":"r","sql":"s","actions":[{"log":1}]}`, wantErr: ErrMalformed},
		{name: "two sinks in one action", in: `{"id":"r","sql":"s","actions":[{"log":{},"nop":{}}]}`, wantErr: ErrInvalid, errText: "exactly one"},
		{name: "graph", in: `{"id":"r","graph":{}}`, wantErr: ErrInvalid, errText: "graph rules are not supported yet"},
		{name: "temp", in: `{"id":"r","sql":"s","actions":[{"log":{}}],"temp":true}`, wantErr: ErrInvalid},
		{name: "no id", in: `{"sql":"s","actions":[{"log":{}}]}`, wantErr: ErrInvalid, errText: "id is required"},
		{name: "slash id", in: `{"id":"a/b","sql":"s","actions":[{"log":{}}]}`, wantErr: ErrInvalid},
		{name: "no sql", in: `{"id":"r","actions":[{"log":{}}]}`, wantErr: ErrInvalid, errText: "sql is required"},
		{name: "no actions", in: `{"id":"r","sql":"s","actions":[]}`, wantErr: ErrInvalid, errText: "actions are required"},
		{name: "bad qos", in: `{"id":"r","sql":"s","actions":[{"log":{}}],"options":{"qos":3}}`, wantErr: ErrInvalid},
		{name: "bad jitter", in: `{"id":"r","sql":"s","actions":[{"log":{}}],"options":{"restartStrategy":{"jitterFactor":1.5}}}`, wantErr: ErrInvalid},
		{name: "cron without duration", in: `{"id":"r","sql":"s","actions":[{"log":{}}],"options":{"cron":"* * * * *"}}`, wantErr: ErrInvalid},
		{name: "duration without cron", in: `{"id":"r","sql":"s","actions":[{"log":{}}],"options":{"duration":"1m"}}`, wantErr: ErrInvalid},
		{name: "bad cron", in: `{"id":"r","sql":"s","actions":[{"log":{}}],"options":{"cron":"61 * * * *","duration":"1m"}}`, wantErr: ErrInvalid},
		{name: "cron", in: `{"id":"r","sql":"s","actions":[{"log":{}}],"options":{"cron":"*/5 * * * *","duration":"90s"}}`,
			check: func(t *testing.T, d *Def) {
				s, err := d.Schedule()
				if err != nil || s == nil || s.Duration != 90*time.Second {
					t.Fatalf("schedule %+v %v", s, err)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ParseDef([]byte(tc.in), base)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("got %v, want %v containing %q", err, tc.wantErr, tc.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(d.Raw) != strings.TrimSpace(tc.in) {
				t.Fatalf("raw not kept as given: %s", d.Raw)
			}
			tc.check(t, d)
		})
	}
}

func TestOptionsFromConfigCoversEveryKey(t *testing.T) {
	c := config.RuleOptions{
		Debug: true, LogFilename: "f", IsEventTime: true, LateTolerance: config.Duration(3 * time.Second),
		Concurrency: 2, BufferLength: 9, SendMetaToSink: true, SendNilField: true, SendError: true, Qos: 2,
		CheckpointInterval: config.Duration(time.Minute), Cron: "* * * * *", Duration: config.Duration(time.Minute),
		NotifySub: true, DisableBufferFullDiscard: true, EnableSaveStateBeforeStop: true,
		ForceExitTimeout:  config.Duration(7 * time.Second),
		RestartStrategy:   config.RestartStrategy{Attempts: 4, Delay: config.Duration(time.Second), Multiplier: 3, MaxDelay: config.Duration(time.Minute), JitterFactor: 0.3},
		CronDatetimeRange: []config.DatetimeRange{{Begin: "2024-01-01 00:00:00", End: "2024-02-01 00:00:00"}},
	}
	c.PlanOptimizeStrategy.EnableIncrementalWindow = true
	c.Experiment.UseSliceTuple = true
	o := OptionsFromConfig(c)
	want := Options{
		Debug: true, LogFilename: "f", IsEventTime: true, LateTolerance: Duration(3 * time.Second),
		Concurrency: 2, BufferLength: 9, SendMetaToSink: true, SendNilField: true, SendError: true, Qos: 2,
		CheckpointInterval: Duration(time.Minute), Cron: "* * * * *", Duration: "1m0s", NotifySub: true,
		DisableBufferFullDiscard: true, EnableSaveStateBeforeStop: true, ForceExitTimeout: Duration(7 * time.Second),
		RestartStrategy:   RestartStrategy{Attempts: 4, Delay: Duration(time.Second), Multiplier: 3, MaxDelay: Duration(time.Minute), JitterFactor: 0.3},
		CronDatetimeRange: []DatetimeRange{{Begin: "2024-01-01 00:00:00", End: "2024-02-01 00:00:00"}},
	}
	if o.PlanOptimizeStrategy["enableIncrementalWindow"] != true || o.Experiment["useSliceTuple"] != true {
		t.Fatalf("nested options lost: %v %v", o.PlanOptimizeStrategy, o.Experiment)
	}
	o.PlanOptimizeStrategy, o.Experiment = nil, nil
	if !reflect.DeepEqual(o, want) {
		t.Fatalf("got  %+v\nwant %+v", o, want)
	}
}

func TestSecrets(t *testing.T) {
	props := map[string]any{
		"server": "tcp://h", "password": "pw", "saslPassword": "sp", "token": "tk", "privateKey": "pk",
		"privateKeyRaw": "pkr", "certificationRaw": "cert", "clientSecret": "cs", "empty": "", "accessToken": "",
		"nested": map[string]any{"apiToken": "t2", "port": int64(1)},
		"list":   []any{map[string]any{"password": "x"}, "plain"},
	}
	masked := MaskProps(props)
	for _, k := range []string{"password", "saslPassword", "token", "privateKey", "privateKeyRaw", "clientSecret"} {
		if masked[k] != MaskedValue {
			t.Errorf("%s not masked: %v", k, masked[k])
		}
	}
	if masked["certificationRaw"] != "cert" || masked["server"] != "tcp://h" || masked["accessToken"] != "" {
		t.Errorf("non-secrets changed: %v", masked)
	}
	if masked["nested"].(map[string]any)["apiToken"] != MaskedValue || masked["list"].([]any)[0].(map[string]any)["password"] != MaskedValue {
		t.Errorf("nested secrets not masked: %v", masked)
	}
	if props["password"] != "pw" {
		t.Fatal("MaskProps modified its input")
	}
	restored, changed, err := RestoreProps(masked, props)
	if err != nil || !changed || restored["password"] != "pw" || restored["nested"].(map[string]any)["apiToken"] != "t2" {
		t.Fatalf("restore: %v", restored)
	}
	if _, changed, _ := RestoreProps(map[string]any{"password": "new"}, props); changed {
		t.Fatal("a new secret was replaced")
	}
}

func TestDefJSON(t *testing.T) {
	d, err := ParseDef([]byte(`{"id":"r","sql":"s","actions":[{"mqtt":{"password":"pw","server":"a"}}],"tags":["x"]}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	masked, err := d.MaskedJSON(false)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(masked, &m); err != nil {
		t.Fatal(err)
	}
	if m["triggered"] != false || strings.Contains(string(masked), `"pw"`) || !strings.Contains(string(masked), MaskedValue) {
		t.Fatalf("masked json %s", masked)
	}
	tagged, err := d.WithTags([]string{"y", "z"})
	if err != nil {
		t.Fatal(err)
	}
	re, err := ParseDef(tagged.Raw, Options{})
	if err != nil || !reflect.DeepEqual(re.Tags, []string{"y", "z"}) || !reflect.DeepEqual(d.Tags, []string{"x"}) {
		t.Fatalf("tags %v (orig %v) %v", re.Tags, d.Tags, err)
	}
	upd, err := ParseDef(masked, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := upd.RestoreSecrets(d); err != nil {
		t.Fatal(err)
	}
	re, err = ParseDef(upd.Raw, Options{})
	if err != nil || re.Actions[0].Props["password"] != "pw" {
		t.Fatalf("restored raw %s", upd.Raw)
	}
}

func TestDefSQLSecrets(t *testing.T) {
	sql := `SELECT rest_call("http://u:sqlPW@h/x") AS a FROM s`
	d, err := ParseDef([]byte(`{"id":"r","sql":`+strconv.Quote(sql)+`,"actions":[{"log":{}}]}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	masked, err := d.MaskedJSON(true)
	if err != nil || strings.Contains(string(masked), "sqlPW") {
		t.Fatalf("masked json %s %v", masked, err)
	}
	back, err := ParseDef(masked, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := back.RestoreSecrets(d); err != nil || back.SQL != sql || !strings.Contains(string(back.Raw), "sqlPW") {
		t.Fatalf("restored %q %s %v", back.SQL, back.Raw, err)
	}
	moved, err := ParseDef([]byte(strings.Replace(string(masked), "@h/", "@evil/", 1)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := moved.RestoreSecrets(d); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "the rule's sql carries a masked value") {
		t.Fatalf("sql with a masked password and a new host: %v", err)
	}
}
