package mqtt

import (
	"context"
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
