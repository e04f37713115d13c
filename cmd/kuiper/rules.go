package main

import (
	"context"
	"fmt"
	"io"

	"github.com/rekuiper/rekuiper/internal/client"
)

// ruleCommand is a command of the form `kuiper VERB rule NAME`: it checks
// the words and the name, then runs do on the named rule.
func ruleCommand(verb string, do func(ctx context.Context, c *client.Client, name string, stdout io.Writer) error) func(args []string, stdout, stderr io.Writer) int {
	usage := "kuiper " + verb + " rule NAME [-host H] [-port P]"
	return func(args []string, stdout, stderr io.Writer) int {
		return remote(args, stdout, stderr, usage, func(ctx context.Context, c *client.Client, ra remoteArgs) error {
			if len(ra.pos) != 2 || ra.pos[0] != "rule" {
				return usageError("want rule NAME")
			}
			if err := checkName("rule", ra.pos[1]); err != nil {
				return err
			}
			return do(ctx, c, ra.pos[1], stdout)
		})
	}
}

// ruleVerb runs start, stop or restart on one rule.
func ruleVerb(action string) func(args []string, stdout, stderr io.Writer) int {
	return ruleCommand(action, func(ctx context.Context, c *client.Client, name string, stdout io.Writer) error {
		msg, err := c.RuleAction(ctx, name, action)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, msg)
		return nil
	})
}

func runGetStatus(args []string, stdout, stderr io.Writer) int {
	return ruleCommand("getstatus", func(ctx context.Context, c *client.Client, name string, stdout io.Writer) error {
		st, err := c.RuleStatus(ctx, name)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, st)
		return nil
	})(args, stdout, stderr)
}

func runGetTopo(args []string, stdout, stderr io.Writer) int {
	return ruleCommand("gettopo", func(ctx context.Context, c *client.Client, name string, stdout io.Writer) error {
		topo, err := c.RuleTopo(ctx, name)
		if err != nil {
			return err
		}
		printJSON(stdout, topo)
		return nil
	})(args, stdout, stderr)
}

func runValidate(args []string, stdout, stderr io.Writer) int {
	return remote(args, stdout, stderr, "kuiper validate rule NAME '{json}' [-f FILE] [-host H] [-port P]", func(ctx context.Context, c *client.Client, ra remoteArgs) error {
		if len(ra.pos) < 2 || ra.pos[0] != "rule" {
			return usageError("want rule NAME and a definition")
		}
		def, err := definition(ra, 2)
		if err != nil {
			return err
		}
		body, err := withID(def, ra.pos[1])
		if err != nil {
			return err
		}
		out, err := c.ValidateRule(ctx, body)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, out)
		return nil
	})
}
