package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/rekuiper/rekuiper/internal/client"
)

const (
	usageImport = "kuiper import ruleset -f FILE | import data -f FILE [-p true] [-host H] [-port P]"
	usageExport = "kuiper export ruleset FILE | export data FILE [-r '[\"rule1\"]'] [-host H] [-port P]"
)

func runImport(args []string, stdout, stderr io.Writer) int {
	return remote(args, stdout, stderr, usageImport, func(ctx context.Context, c *client.Client, ra remoteArgs) error {
		if len(ra.pos) != 1 || ra.flags["f"] == "" {
			return usageError("want ruleset or data, and -f FILE")
		}
		content, err := os.ReadFile(ra.flags["f"])
		if err != nil {
			return fmt.Errorf("read import file: %w", err)
		}
		switch ra.pos[0] {
		case "ruleset":
			msg, err := c.ImportRuleset(ctx, content)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, msg)
		case "data":
			out, err := c.ImportData(ctx, content, ra.has("p") || ra.has("partial"))
			if err != nil {
				return err
			}
			printJSON(stdout, out)
		default:
			return usageError("unknown kind " + ra.pos[0])
		}
		return nil
	})
}

func runExport(args []string, stdout, stderr io.Writer) int {
	return remote(args, stdout, stderr, usageExport, func(ctx context.Context, c *client.Client, ra remoteArgs) error {
		if len(ra.pos) != 2 {
			return usageError("want ruleset or data, and a FILE")
		}
		var doc []byte
		var err error
		switch ra.pos[0] {
		case "ruleset":
			doc, err = c.ExportRuleset(ctx)
		case "data":
			var ids []string
			if r := ra.flags["r"]; r != "" {
				if err := json.Unmarshal([]byte(r), &ids); err != nil {
					return usageError("-r wants a json array of rule ids")
				}
			}
			doc, err = c.ExportData(ctx, ids)
		default:
			return usageError("unknown kind " + ra.pos[0])
		}
		if err != nil {
			return err
		}
		if err := os.WriteFile(ra.pos[1], doc, 0o600); err != nil {
			return fmt.Errorf("write export file: %w", err)
		}
		fmt.Fprintf(stdout, "%s is exported to %s\n", ra.pos[0], ra.pos[1])
		return nil
	})
}
