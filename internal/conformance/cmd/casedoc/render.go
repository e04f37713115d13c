package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"github.com/rekuiper/rekuiper/internal/conformance"
)

// corpusCase is what the appendix shows of one case.
type corpusCase struct {
	id     string // suite/name
	folder string // first folder under the corpus: cases, differential, generated
	sql    string
	quirk  string // eKuiper's behaviour, when the case records one
	notes  string
	skip   string
}

// section is one heading of the compatibility notes and the text under it,
// up to the next heading.
type section struct {
	title, anchor, text string
}

// render reads the corpus under corpusDir and the notes at compatPath and
// returns the appendix. Links in it are relative to the folder of the
// notes, where the appendix is written.
func render(corpusDir, compatPath string) ([]byte, error) {
	cases, err := loadCorpus(corpusDir)
	if err != nil {
		return nil, err
	}
	doc, err := os.ReadFile(compatPath)
	if err != nil {
		return nil, fmt.Errorf("read compatibility notes: %w", err)
	}
	sections := splitSections(string(doc))
	named, kept := assign(cases, sections)
	notes := filepath.Base(compatPath)

	var b bytes.Buffer
	writeIntro(&b, notes)
	writeCounts(&b, cases)
	writeNamed(&b, notes, sections, named)
	writeKept(&b, kept)
	return b.Bytes(), nil
}

// loadCorpus reads every case file under dir, sorted by ID.
func loadCorpus(dir string) ([]corpusCase, error) {
	paths, err := conformance.Discover(dir)
	if err != nil {
		return nil, fmt.Errorf("list the corpus: %w", err)
	}
	out := make([]corpusCase, 0, len(paths))
	for _, p := range paths {
		c, err := conformance.Load(p)
		if err != nil {
			return nil, fmt.Errorf("load the corpus: %w", err)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return nil, fmt.Errorf("locate case %s: %w", p, err)
		}
		folder, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		out = append(out, corpusCase{id: c.ID(), folder: folder, sql: c.Rule.SQL,
			quirk: c.Quirk, notes: c.Notes, skip: c.Skip})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, nil
}

// splitSections cuts a Markdown document at its level-2 and level-3
// headings, ignoring lines inside fenced code blocks. Text before the
// first heading is not a section.
func splitSections(doc string) []section {
	var out []section
	slugs := map[string]int{}
	fenced := false
	var cur *section
	for _, line := range strings.SplitAfter(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if !fenced {
			if title, ok := heading(line); ok {
				out = append(out, section{title: title, anchor: anchor(title, slugs)})
				cur = &out[len(out)-1]
				continue
			}
		}
		if cur != nil {
			cur.text += line
		}
	}
	return out
}

// heading returns the title of a level-2 or level-3 heading line.
func heading(line string) (string, bool) {
	for _, p := range []string{"## ", "### "} {
		if strings.HasPrefix(line, p) {
			return strings.TrimSpace(line[len(p):]), true
		}
	}
	return "", false
}

// anchor is the fragment a Markdown renderer gives a heading, as GitHub
// does: lower case, punctuation but '-' and '_' dropped, spaces as '-',
// and -1, -2, ... appended to repeated ones. seen counts the anchors given
// so far in the document.
func anchor(title string, seen map[string]int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	slug := b.String()
	n := seen[slug]
	seen[slug] = n + 1
	if n > 0 {
		slug = fmt.Sprintf("%s-%d", slug, n)
	}
	return slug
}

// assign puts every case the notes name in back-quotes under the first
// section that names it, in the order they appear there, and returns the
// cases with a recorded quirk that no section names.
func assign(cases []corpusCase, sections []section) (named [][]corpusCase, kept []corpusCase) {
	named = make([][]corpusCase, len(sections))
	for _, c := range cases {
		found := false
		for i, s := range sections {
			if strings.Contains(s.text, "`"+c.id+"`") {
				named[i] = append(named[i], c)
				found = true
				break
			}
		}
		if !found && c.quirk != "" {
			kept = append(kept, c)
		}
	}
	for i, s := range sections {
		sort.SliceStable(named[i], func(a, b int) bool {
			return strings.Index(s.text, "`"+named[i][a].id+"`") < strings.Index(s.text, "`"+named[i][b].id+"`")
		})
	}
	return named, kept
}
