package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rekuiper/rekuiper/internal/auth"
)

// runToken signs a REST API token with an RSA private key file.
func runToken(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	keyFile := fs.String("key", "", "PEM RSA private key file (required)")
	iss := fs.String("iss", "", "issuer: the name of the matching public key file in etc/mgmt, e.g. admin.pub (required)")
	sub := fs.String("sub", "", "subject: who uses the token; shown in the audit log")
	aud := fs.String("aud", auth.Audience, "audience, comma-separated; kuiperd requires "+auth.Audience)
	exp := fs.Duration("exp", time.Hour, "lifetime; 0 makes a token that never expires")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: kuiper token -key FILE -iss NAME [-sub SUBJECT] [-aud LIST] [-exp DURATION]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *keyFile == "" || *iss == "" || fs.NArg() > 0 || *exp < 0 {
		fs.Usage()
		return 2
	}
	pem, err := os.ReadFile(*keyFile)
	if err != nil {
		fmt.Fprintf(stderr, "kuiper: read private key: %v\n", err)
		return 1
	}
	now := time.Now()
	o := auth.SignOptions{Issuer: *iss, Subject: *sub, Now: now}
	for _, a := range strings.Split(*aud, ",") {
		if a = strings.TrimSpace(a); a != "" {
			o.Audience = append(o.Audience, a)
		}
	}
	if *exp > 0 {
		o.Expires = now.Add(*exp)
	}
	tok, err := auth.Sign(pem, o)
	if err != nil {
		fmt.Fprintf(stderr, "kuiper: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, tok)
	return 0
}
