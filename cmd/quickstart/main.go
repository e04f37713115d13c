// Command quickstart shows rekuiper working with nothing else installed: it
// starts an embedded MQTT broker and kuiperd (in-process, catalog in a
// temporary folder), creates a stream and two rules over the REST API,
// publishes simulated sensor readings, and prints what the rules publish.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/rekuiper/rekuiper/internal/broker"
	"github.com/rekuiper/rekuiper/internal/daemon"
	"github.com/rekuiper/rekuiper/internal/procs"
)

func main() {
	duration := flag.Duration("duration", 20*time.Second, "how long to publish readings before exiting")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, *duration, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "quickstart: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, duration time.Duration, out io.Writer) error {
	dir, err := os.MkdirTemp("", "rekuiper-quickstart")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	b, err := broker.Start(ctx, "")
	if err != nil {
		return fmt.Errorf("embedded broker: %w", err)
	}
	defer b.Close()
	fmt.Fprintf(out, "embedded MQTT broker on %s\n", b.URL())

	port, err := procs.FreePort()
	if err != nil {
		return err
	}
	ready := make(chan string, 1)
	daemonCtx, stopDaemon := context.WithCancel(ctx)
	defer stopDaemon()
	daemonErr := make(chan error, 1)
	go func() {
		daemonErr <- daemon.Run(daemonCtx, daemon.RunOptions{
			BaseDir: dir,
			Environ: append(os.Environ(),
				"KUIPER__BASIC__RESTIP=127.0.0.1",
				"KUIPER__BASIC__RESTPORT="+strconv.Itoa(port),
				"KUIPER__SOURCE__HTTPSERVERPORT=0",
				"MQTT_SOURCE__DEFAULT__SERVER="+b.URL(),
			),
			Stdout:  io.Discard,
			Version: "quickstart",
			Ready:   func(addr string) { ready <- addr },
		})
	}()
	var api string
	select {
	case addr := <-ready:
		api = "http://" + addr
	case err := <-daemonErr:
		return fmt.Errorf("kuiperd: %w", err)
	case <-time.After(30 * time.Second):
		return fmt.Errorf("kuiperd did not start within 30s")
	}
	defer func() {
		stopDaemon()
		<-daemonErr
	}()
	fmt.Fprintf(out, "kuiperd REST API on %s (catalog in %s)\n\n", api, filepath.Join(dir, "data"))

	steps := []struct{ path, body string }{
		{"/streams", `{"sql":"CREATE STREAM sensors (deviceId STRING, temperature FLOAT, humidity BIGINT) WITH (DATASOURCE=\"demo/sensors\", FORMAT=\"json\")"}`},
		{"/rules", `{"id":"hot","sql":"SELECT deviceId, temperature FROM sensors WHERE temperature > 29","actions":[{"mqtt":{"server":"` + b.URL() + `","topic":"demo/out/hot/{{.deviceId}}","sendSingle":true}}]}`},
		{"/rules", `{"id":"averages","sql":"SELECT deviceId, round(avg(temperature), 2) AS avgTemp, max(humidity) AS maxHumidity, count(*) AS readings FROM sensors GROUP BY deviceId, TUMBLINGWINDOW(ss, 5) ORDER BY deviceId","actions":[{"mqtt":{"server":"` + b.URL() + `","topic":"demo/out/averages"}}]}`},
	}
	for _, s := range steps {
		fmt.Fprintf(out, "POST %s %s\n", s.path, s.body)
		text, err := post(api+s.path, s.body)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  -> %s\n", text)
	}

	sub := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID("quickstart-subscriber"))
	if t := sub.Connect(); t.Wait() && t.Error() != nil {
		return fmt.Errorf("subscriber: %w", t.Error())
	}
	defer sub.Disconnect(100)
	results := make(chan string, 1024)
	if t := sub.Subscribe("demo/out/#", 1, func(_ paho.Client, m paho.Message) {
		results <- fmt.Sprintf("%-28s %s", m.Topic(), m.Payload())
	}); t.Wait() && t.Error() != nil {
		return fmt.Errorf("subscribe: %w", t.Error())
	}

	pub := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID("quickstart-publisher"))
	if t := pub.Connect(); t.Wait() && t.Error() != nil {
		return fmt.Errorf("publisher: %w", t.Error())
	}
	defer pub.Disconnect(100)

	fmt.Fprintf(out, "\npublishing readings of 3 devices to demo/sensors for %s; results:\n", duration)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	end := time.After(duration)
	rng := rand.New(rand.NewPCG(1, 2))
	count := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-end:
			fmt.Fprintf(out, "\n%d rule results received; stopping.\n", count)
			return nil
		case r := <-results:
			count++
			fmt.Fprintln(out, r)
		case <-tick.C:
			reading, _ := json.Marshal(map[string]any{
				"deviceId":    fmt.Sprintf("dev-%d", rng.IntN(3)+1),
				"temperature": 20 + float64(rng.IntN(120))/10,
				"humidity":    40 + rng.IntN(30),
			})
			pub.Publish("demo/sensors", 1, false, reading)
		}
	}
}

func post(url, body string) (string, error) {
	resp, err := http.Post(url, "application/json", bytes.NewBufferString(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return "", fmt.Errorf("POST %s: %d %s", url, resp.StatusCode, data)
	}
	return string(data), nil
}
