// Command kuiper is rekuiper's command-line client. `kuiper test` runs rule
// test files offline; the other commands drive a kuiperd over REST.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// command is one top-level verb of the CLI.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

func commands() map[string]command {
	return map[string]command{
		"test":      {summary: "replay rule test files offline on a virtual clock", run: runTest},
		"create":    {summary: "create a stream, table or rule", run: runCreate},
		"describe":  {summary: "describe a stream, table or rule", run: runDescribe},
		"drop":      {summary: "drop a stream, table or rule", run: runDrop},
		"show":      {summary: "list streams, tables or rules", run: runShow},
		"start":     {summary: "start a rule", run: ruleVerb("start")},
		"stop":      {summary: "stop a rule", run: ruleVerb("stop")},
		"restart":   {summary: "restart a rule", run: ruleVerb("restart")},
		"getstatus": {summary: "print a rule's status and metrics", run: runGetStatus},
		"gettopo":   {summary: "print a running rule's topology", run: runGetTopo},
		"validate":  {summary: "validate a rule without creating it", run: runValidate},
		"import":    {summary: "import a ruleset or data export", run: runImport},
		"export":    {summary: "export the ruleset or all data", run: runExport},
		"query":     {summary: "interactive shell: run SELECT statements and print their results", run: queryCmd(os.Stdin)},
		"token":     {summary: "sign a REST API token with a private key", run: runToken},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	args, err := commandFirst(args)
	if err != nil {
		fmt.Fprintf(stderr, "kuiper: %v\n", err)
		return 2
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout, cmds)
		return 0
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "kuiper: unknown command %q\n", args[0])
		usage(stderr, cmds)
		return 2
	}
	return c.run(args[1:], stdout, stderr)
}

// commandFirst moves flags given before the command word after it, as
// eKuiper's CLI accepts them (`kuiper -host h -port 9081 show rules`).
func commandFirst(args []string) ([]string, error) {
	var pre []string
	i := 0
	for i < len(args) && len(args[i]) > 1 && args[i][0] == '-' && args[i] != "-h" && args[i] != "--help" {
		name := strings.TrimLeft(args[i], "-")
		pre = append(pre, args[i])
		i++
		if !strings.Contains(name, "=") && valueFlags[name] {
			if i >= len(args) {
				return nil, fmt.Errorf("flag -%s needs a value", name)
			}
			pre = append(pre, args[i])
			i++
		}
	}
	if len(pre) == 0 {
		return args, nil
	}
	if i >= len(args) {
		return nil, fmt.Errorf("missing command after %s", strings.Join(pre, " "))
	}
	out := append([]string{args[i]}, args[i+1:]...)
	return append(out, pre...), nil
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "usage: kuiper <command> [arguments]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
}
