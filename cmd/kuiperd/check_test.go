package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/client"
)

// kuiperd wires the engine's checks into the REST API: definitions that
// could not run are refused at creation.
func TestDaemonChecksAtCreation(t *testing.T) {
	d := startDaemon(t, buildDaemon(t), t.TempDir())
	ctx := context.Background()
	refused := func(err error, status int, text string) {
		t.Helper()
		var ae *client.APIError
		if !errors.As(err, &ae) || ae.Status != status || !strings.Contains(ae.Message, text) {
			t.Fatalf("got %v, want status %d with %q", err, status, text)
		}
	}
	_, err := d.c.CreateStream(ctx, client.Stream, `CREATE STREAM s1 () WITH (TYPE="nosuch", DATASOURCE="t")`)
	refused(err, 400, `stream s1: unknown TYPE "nosuch"`)
	_, err = d.c.CreateStream(ctx, client.Stream, `CREATE STREAM s1 () WITH (DATASOURCE="t", CONF_KEY="nokey")`)
	refused(err, 400, `CONF_KEY "nokey" is not a confKey of source type mqtt`)
	if _, err := d.c.CreateStream(ctx, client.Stream, `CREATE STREAM s1 (temperature float) WITH (TYPE="memory", DATASOURCE="t")`); err != nil {
		t.Fatal(err)
	}
	_, err = d.c.CreateRule(ctx, []byte(`{"id":"r1","sql":"SELECT temprature FROM s1","actions":[{"log":{}}]}`))
	refused(err, 422, "1:8: unknown field temprature")
	if _, err := d.c.CreateRule(ctx, []byte(`{"id":"r1","sql":"SELECT temperature FROM s1","actions":[{"log":{}}]}`)); err != nil {
		t.Fatal(err)
	}
}
