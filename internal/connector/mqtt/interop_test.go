package mqtt

import (
	"context"
	"fmt"
	"testing"

	"github.com/rekuiper/rekuiper/internal/broker"
	"github.com/rekuiper/rekuiper/internal/connector/mqtt/mqtttest"
)

func TestCoreMosquitto(t *testing.T) {
	m := mqtttest.StartMosquitto(t)
	runCoreSuite(t, coreBroker{url: m.URL("plain"), versions: []string{"3.1.1", "5"}, restart: m.Restart})
}

func TestCoreMochi(t *testing.T) {
	b, err := broker.Start(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	addr := b.Addr()
	cur := b
	t.Cleanup(func() { _ = cur.Close() })
	restart := func() {
		_ = cur.Close()
		nb, err := broker.Start(context.Background(), addr)
		if err != nil {
			t.Fatalf("restart mochi: %v", err)
		}
		cur = nb
	}
	runCoreSuite(t, coreBroker{url: b.URL(), versions: []string{"3.1.1", "5"}, restart: restart})
}

func TestCoreNATS(t *testing.T) {
	n := mqtttest.StartNATS(t)
	runCoreSuite(t, coreBroker{url: n.URL(), versions: []string{"3.1.1"}, restart: n.Restart})
}

// TestCoreRabbitMQ runs the core suite against a private RabbitMQ node with
// the MQTT plugin. Its first boot takes 10-15 s, so the node is shared by
// every case.
func TestCoreRabbitMQ(t *testing.T) {
	r := mqtttest.StartRabbitMQ(t)
	versions := []string{"3.1.1"}
	if rabbitServesMQTT5(r.Version()) {
		versions = append(versions, "5")
	}
	t.Logf("RabbitMQ %q on %s, MQTT versions %v", r.Version(), r.URL(), versions)
	runCoreSuite(t, coreBroker{url: r.URL(), versions: versions, restart: r.Restart})
}

// rabbitServesMQTT5 reports whether a RabbitMQ version's MQTT plugin
// accepts MQTT 5 (3.13 and later; 3.10 closes a v5 CONNECT unanswered).
func rabbitServesMQTT5(version string) bool {
	var major, minor int
	if _, err := fmt.Sscanf(version, "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major > 3 || major == 3 && minor >= 13
}

func TestRabbitServesMQTT5(t *testing.T) {
	for v, want := range map[string]bool{"3.10.8": false, "3.12.14": false, "3.13.0": true, "4.0.5": true, "": false, "x": false} {
		if got := rabbitServesMQTT5(v); got != want {
			t.Errorf("rabbitServesMQTT5(%q) = %v, want %v", v, got, want)
		}
	}
}
