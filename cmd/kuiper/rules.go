package main

import (
	"context"
	"fmt"
	"io"

	"github.com/rekuiper/rekuiper/internal/client"
)

// ruleVerb runs start, stop or restart on one rule.
func ruleVerb(action string) func(args []string, stdout, stderr io.Writer) int {
	usage := "kuiper " + action + " rule NAME [-host H] [-port P]"
	return func(args []string, stdout, stderr io.Writer) int {
		return remote(args, stdout, stderr, usage, func(ctx context.Context, c *client.Client, ra remoteArgs) error {
			if len(ra.pos) != 2 || ra.pos[0] != "rule" {
				return usageError("want rule NAME")
			}
			if err := checkName("rule", ra.pos[1]); err != nil {
				return err
			}
			msg, err := c.RuleAction(ctx, ra.pos[1], action)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, msg)
			return nil
		})
	}
}

func runGetStatus(args []string, stdout, stderr io.Writer) int {
	return remote(args, stdout, stderr, "kuiper getstatus rule NAME [-host H] [-port P]", func(ctx context.Context, c *client.Client, ra remoteArgs) error {
		if len(ra.pos) != 2 || ra.pos[0] != "rule" {
			return usageError("want rule NAME")
		}
		if err := checkName("rule", ra.pos[1]); err != nil {
			return err
		}
		st, err := c.RuleStatus(ctx, ra.pos[1])
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, st)
		return nil
	})
}

func runGetTopo(args []string, stdout, stderr io.Writer) int {
	return remote(args, stdout, stderr, "kuiper gettopo rule NAME [-host H] [-port P]", func(ctx context.Context, c *client.Client, ra remoteArgs) error {
		if len(ra.pos) != 2 || ra.pos[0] != "rule" {
			return usageError("want rule NAME")
		}
		if err := checkName("rule", ra.pos[1]); err != nil {
			return err
		}
		topo, err := c.RuleTopo(ctx, ra.pos[1])
		if err != nil {
			return err
		}
		printJSON(stdout, topo)
		return nil
	})
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
