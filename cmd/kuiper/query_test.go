package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/procs"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

func TestQueryShell(t *testing.T) {
	host, port := engineDaemon(t)
	var out, errOut bytes.Buffer
	if code := run([]string{"-host", host, "-port", port, "create", "stream", "sim", `() WITH (TYPE="simulator", EXTRA="{\"interval\":5,\"data\":[{\"temperature\":20,\"humidity\":50}]}")`}, &out, &errOut); code != 0 {
		t.Fatalf("create stream: %d %s", code, errOut.String())
	}
	in, feed := io.Pipe()
	stdout := &procs.SyncBuffer{}
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- queryCmd(in)([]string{"-host", host, "-port", port}, stdout, &stderr) }()
	io.WriteString(feed, "SELECT temperature FROM sim WHERE temperature > 10;\n")
	testwait.Until(t, "the query's first result", func() bool { return strings.Contains(stdout.String(), `{"temperature":20}`) })
	io.WriteString(feed, "SELECT nope FROM nowhere\n")
	testwait.Until(t, "the refusal of the second query", func() bool { return strings.Contains(stdout.String(), "nowhere is not found") })
	io.WriteString(feed, "exit\n")
	feed.Close()
	if code := <-done; code != 0 {
		t.Fatalf("shell exit %d: %s", code, stderr.String())
	}
	got := stdout.String()
	for _, want := range []string{"kuiper > ", "query is submitted", `{"temperature":20}`, "nowhere is not found"} {
		if !strings.Contains(got, want) {
			t.Fatalf("shell output %q lacks %q", got, want)
		}
	}
	out.Reset()
	if code := run([]string{"show", "rules", "-host", host, "-port", port}, &out, &errOut); code != 0 || strings.Contains(out.String(), "kuiper_query") {
		t.Fatalf("query rule left behind: %d %s", code, out.String())
	}
}

func TestFlagsBeforeCommand(t *testing.T) {
	host, port := testDaemon(t)
	for _, args := range [][]string{
		{"-host", host, "-port", port, "show", "streams"},
		{"-host=" + host, "show", "-port", port, "streams"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "No stream definitions") {
			t.Fatalf("%v: exit %d %q %q", args, code, stdout.String(), stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-host", host}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "missing command") {
		t.Fatalf("flags only: exit %d %q", code, stderr.String())
	}
	if code := run([]string{"-port"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "needs a value") {
		t.Fatalf("flag without value: exit %d %q", code, stderr.String())
	}
}
