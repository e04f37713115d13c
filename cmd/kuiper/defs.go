package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/rekuiper/rekuiper/internal/client"
	"github.com/rekuiper/rekuiper/internal/guard"
)

const (
	usageCreate   = "kuiper create stream|table NAME 'CREATE ...' | create rule NAME '{json}' [-f FILE] [-host H] [-port P]"
	usageDescribe = "kuiper describe stream|table|rule NAME [-host H] [-port P]"
	usageDrop     = "kuiper drop stream|table|rule NAME [-force] [-host H] [-port P]"
	usageShow     = "kuiper show streams|tables|rules|plugins [source|sink|function|portable]|services|schemas [protobuf]|udfs [-host H] [-port P]"
)

func streamKind(noun string) (client.Kind, bool) {
	switch strings.TrimSuffix(noun, "s") {
	case "stream":
		return client.Stream, true
	case "table":
		return client.Table, true
	}
	return "", false
}

func runCreate(args []string, stdout, stderr io.Writer) int {
	return remote(args, stdout, stderr, usageCreate, func(ctx context.Context, c *client.Client, ra remoteArgs) error {
		if len(ra.pos) < 2 {
			return usageError("want a kind and a name")
		}
		if path, ok := extensionCreate(ra.pos[0]); ok {
			// The daemon answers 501 naming the alternative.
			_, err := c.Text(ctx, "POST", path, map[string]any{"name": ra.pos[len(ra.pos)-1]})
			return err
		}
		def, err := definition(ra, 2)
		if err != nil {
			return err
		}
		noun, name := ra.pos[0], ra.pos[1]
		if err := checkName(noun, name); err != nil {
			return err
		}
		if k, ok := streamKind(noun); ok {
			sql := strings.TrimSpace(string(def))
			if !strings.HasPrefix(strings.ToUpper(sql), "CREATE") {
				// eKuiper's CLI also accepts the statement without CREATE ... NAME.
				sql = fmt.Sprintf("CREATE %s %s %s", strings.ToUpper(string(k)), name, sql)
			}
			msg, err := c.CreateStream(ctx, k, sql)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, msg)
			return nil
		}
		if noun != "rule" {
			return usageError("unknown kind " + noun)
		}
		body, err := withID(def, name)
		if err != nil {
			return err
		}
		msg, err := c.CreateRule(ctx, body)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, msg)
		return nil
	})
}

// checkName refuses a name the daemon would refuse (guard.Name) before
// anything is sent.
func checkName(noun, name string) error {
	if err := guard.Name(strings.TrimSuffix(noun, "s")+" name", name); err != nil {
		return usageError(strings.TrimPrefix(err.Error(), guard.ErrName.Error()+": "))
	}
	return nil
}

// withID sets the rule's id to name when the JSON has none.
func withID(def []byte, name string) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(def, &top); err != nil {
		return nil, fmt.Errorf("rule definition is not a json object: %w", err)
	}
	if _, ok := top["id"]; ok {
		return def, nil
	}
	id, _ := json.Marshal(name)
	top["id"] = id
	return json.Marshal(top)
}

func runDescribe(args []string, stdout, stderr io.Writer) int {
	return remote(args, stdout, stderr, usageDescribe, func(ctx context.Context, c *client.Client, ra remoteArgs) error {
		if len(ra.pos) != 2 {
			return usageError("want a kind and a name")
		}
		noun, name := ra.pos[0], ra.pos[1]
		if err := checkName(noun, name); err != nil {
			return err
		}
		var raw json.RawMessage
		var err error
		if k, ok := streamKind(noun); ok {
			raw, err = c.DescribeStream(ctx, k, name)
		} else if noun == "rule" {
			raw, err = c.GetRule(ctx, name)
		} else {
			return usageError("unknown kind " + noun)
		}
		if err != nil {
			return err
		}
		printJSON(stdout, raw)
		return nil
	})
}

func runDrop(args []string, stdout, stderr io.Writer) int {
	return remote(args, stdout, stderr, usageDrop, func(ctx context.Context, c *client.Client, ra remoteArgs) error {
		if len(ra.pos) != 2 {
			return usageError("want a kind and a name")
		}
		noun, name := ra.pos[0], ra.pos[1]
		if err := checkName(noun, name); err != nil {
			return err
		}
		var msg string
		var err error
		if k, ok := streamKind(noun); ok {
			msg, err = c.DropStream(ctx, k, name, ra.has("force"))
		} else if noun == "rule" {
			msg, err = c.DeleteRule(ctx, name)
		} else {
			return usageError("unknown kind " + noun)
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, msg)
		return nil
	})
}

func runShow(args []string, stdout, stderr io.Writer) int {
	return remote(args, stdout, stderr, usageShow, func(ctx context.Context, c *client.Client, ra remoteArgs) error {
		if len(ra.pos) >= 1 {
			if path, ok := extensionList(ra.pos); ok {
				return showList(ctx, c, path, ra.pos[0], stdout)
			}
		}
		if len(ra.pos) != 1 {
			return usageError("want streams, tables or rules")
		}
		if k, ok := streamKind(ra.pos[0]); ok {
			names, err := c.ListStreams(ctx, k)
			if err != nil {
				return err
			}
			if len(names) == 0 {
				fmt.Fprintf(stdout, "No %s definitions were found.\n", k)
			}
			for _, n := range names {
				fmt.Fprintln(stdout, n)
			}
			return nil
		}
		if strings.TrimSuffix(ra.pos[0], "s") != "rule" {
			return usageError("unknown kind " + ra.pos[0])
		}
		rules, err := c.ListRules(ctx)
		if err != nil {
			return err
		}
		b, err := json.Marshal(rules)
		if err != nil {
			return err
		}
		printJSON(stdout, b)
		return nil
	})
}

// extensionCreate is where eKuiper's `create plugin|service|schema` post.
func extensionCreate(noun string) (string, bool) {
	switch noun {
	case "plugin":
		return "/plugins/sources", true
	case "service":
		return "/services", true
	case "schema":
		return "/schemas/protobuf", true
	}
	return "", false
}

// extensionList maps `show plugins [kind]`, `show services`, `show schemas
// [type]` and `show udfs` to their REST list routes. rekuiper offers none
// of these extensions, so the lists are empty; the commands exist so that
// scripts written for eKuiper's CLI keep working.
func extensionList(pos []string) (string, bool) {
	arg := func(def string) string {
		if len(pos) > 1 {
			return pos[1]
		}
		return def
	}
	switch pos[0] {
	case "plugins":
		return "/plugins/" + strings.TrimSuffix(arg("source"), "s") + "s", len(pos) <= 2
	case "services":
		return "/services", len(pos) == 1
	case "schemas":
		return "/schemas/" + arg("protobuf"), len(pos) <= 2
	case "udfs":
		return "/plugins/udfs", len(pos) == 1
	}
	return "", false
}

func showList(ctx context.Context, c *client.Client, path, what string, stdout io.Writer) error {
	var items []any
	if err := c.JSON(ctx, "GET", path, nil, &items); err != nil {
		return err
	}
	if len(items) == 0 {
		fmt.Fprintf(stdout, "No %s were found.\n", what)
		return nil
	}
	b, err := json.Marshal(items)
	if err != nil {
		return err
	}
	printJSON(stdout, b)
	return nil
}
