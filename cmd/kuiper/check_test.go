package main

import (
	"net/url"
	"testing"

	"github.com/rekuiper/rekuiper/internal/server/servertest"
)

// engineDaemon serves the REST API over the daemon's engine, which checks
// stream definitions and plans rules as kuiperd does.
func engineDaemon(t *testing.T) (host, port string) {
	t.Helper()
	d := servertest.Start(t, servertest.Options{})
	u, _ := url.Parse(d.URL)
	return u.Hostname(), u.Port()
}

// The CLI reports what the daemon refuses at creation.
func TestRemoteCreateChecks(t *testing.T) {
	host, port := engineDaemon(t)
	runCLICases(t, host, port, []cliCase{
		{"unknown type", []string{"create", "stream", "s1", `() WITH (TYPE="nosuch", DATASOURCE="t")`}, 1, `stream s1: unknown TYPE "nosuch"`},
		{"unknown format", []string{"create", "stream", "s1", `() WITH (TYPE="memory", DATASOURCE="t", FORMAT="xml")`}, 1, `unknown format "xml" (status 400)`},
		{"missing confKey", []string{"create", "table", "t1", `() WITH (TYPE="memory", DATASOURCE="t", CONF_KEY="nokey")`}, 1, `CONF_KEY "nokey"`},
		{"typed stream", []string{"create", "stream", "s1", `(temperature float) WITH (TYPE="memory", DATASOURCE="t")`}, 0, "Stream s1 is created."},
		{"unknown field", []string{"create", "rule", "r1", `{"sql":"SELECT temprature FROM s1","actions":[{"log":{}}]}`}, 1, "1:8: unknown field temprature (status 422)"},
		{"validate unknown field", []string{"validate", "rule", "r1", `{"sql":"SELECT temperature FROM s1 WHERE x.temperature > 1","actions":[{"log":{}}]}`}, 1, "unknown field x"},
		{"known field", []string{"create", "rule", "r1", `{"sql":"SELECT temperature FROM s1","actions":[{"log":{}}]}`}, 0, "Rule r1 was created successfully."},
	})
}
