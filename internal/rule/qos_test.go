package rule

import (
	"encoding/json"
	"testing"

	"github.com/rekuiper/rekuiper/internal/config"
)

func TestQoSMeaning(t *testing.T) {
	for _, c := range []struct {
		q                            QoS
		valid, checkpointed, aligned bool
	}{
		{-1, false, false, false},
		{AtMostOnce, true, false, false},
		{AtLeastOnce, true, true, false},
		{ExactlyOnce, true, true, true},
		{3, false, true, true},
	} {
		if got := c.q.Valid(); got != c.valid {
			t.Errorf("QoS(%d).Valid() = %v, want %v", c.q, got, c.valid)
		}
		if got := c.q.Checkpointed(); got != c.checkpointed {
			t.Errorf("QoS(%d).Checkpointed() = %v, want %v", c.q, got, c.checkpointed)
		}
		if got := c.q.Aligned(); got != c.aligned {
			t.Errorf("QoS(%d).Aligned() = %v, want %v", c.q, got, c.aligned)
		}
	}
}

// TestQoSJSON: the qos option stays the bare integer in rule JSON, read
// and written.
func TestQoSJSON(t *testing.T) {
	var v struct {
		Qos QoS `json:"qos"`
	}
	if err := json.Unmarshal([]byte(`{"qos":2}`), &v); err != nil {
		t.Fatal(err)
	}
	if v.Qos != ExactlyOnce {
		t.Fatalf("decoded qos %d, want 2", v.Qos)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"qos":2}` {
		t.Errorf("encoded %s, want {\"qos\":2}", b)
	}

	o, err := ParseOptions(Options{}, map[string]any{"qos": float64(2)})
	if err != nil {
		t.Fatal(err)
	}
	if o.Qos != ExactlyOnce {
		t.Fatalf("ParseOptions qos %d, want 2", o.Qos)
	}
	b, err = json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back["qos"] != float64(2) {
		t.Errorf("options encode qos as %#v, want the number 2", back["qos"])
	}
}

func TestQoSOutOfRange(t *testing.T) {
	for raw, want := range map[float64]string{
		3:  "invalid rule option qos 3: must be 0, 1 or 2",
		-1: "invalid rule option qos -1: must be 0, 1 or 2",
	} {
		_, err := ParseOptions(Options{}, map[string]any{"qos": raw})
		if err == nil || err.Error() != want {
			t.Errorf("qos %v: error %v, want %q", raw, err, want)
		}
	}
}

func TestQoSFromConfig(t *testing.T) {
	if q := OptionsFromConfig(config.RuleOptions{Qos: 2}).Qos; q != ExactlyOnce {
		t.Errorf("kuiper.yaml qos 2 became %d", q)
	}
}
