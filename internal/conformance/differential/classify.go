package differential

import (
	"strings"
)

// Classes of a difference besides the quirk rules' names.
const (
	// Variance: eKuiper gave two different outputs for the case in two
	// runs; its answer is not a fact a case can record.
	Variance = "ekuiper-variance"
	// Unexplained: no quirk rule and no rerun explains the difference.
	Unexplained = "unexplained"
)

// quirkRule recognises differences that a documented deliberate difference
// explains. entry is a case docs/compatibility.md names in back-quotes in
// the row (or paragraph) that documents the behaviour; a test checks that
// the file still names it.
type quirkRule struct {
	name  string
	entry string
	match func(o Outcome) bool
}

// Classify sorts a difference: eKuiper's variance when its two runs
// differed (varied), else the first quirk rule that matches, else
// Unexplained.
func Classify(o Outcome, varied bool) string {
	if varied {
		return Variance
	}
	for _, r := range quirkRules {
		if r.match(o) {
			return r.name
		}
	}
	return Unexplained
}

func describeClass(c string) string {
	for _, r := range quirkRules {
		if r.name == c {
			return "quirk " + r.name + " (" + r.entry + ")"
		}
	}
	return c
}

// sqlHas reports whether the rule's SQL contains any of the fragments
// (case-insensitive).
func sqlHas(o Outcome, frags ...string) bool {
	s := strings.ToLower(o.Case.Rule.SQL)
	for _, f := range frags {
		if strings.Contains(s, strings.ToLower(f)) {
			return true
		}
	}
	return false
}

// ekuiperSays reports whether one of eKuiper's error rows or its refusal
// contains any of the fragments.
func ekuiperSays(o Outcome, frags ...string) bool {
	texts := []string{o.Case.OracleError}
	for _, em := range o.Case.Expected {
		for _, r := range em {
			if e, ok := r["error"].(string); ok && len(r) == 1 {
				texts = append(texts, e)
			}
		}
	}
	for _, t := range texts {
		for _, f := range frags {
			if t != "" && strings.Contains(t, f) {
				return true
			}
		}
	}
	return false
}

var quirkRules = []quirkRule{}
