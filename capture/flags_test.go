package main

import (
	"flag"
	"io"
)

func newTestFlags(out io.Writer, e map[string]string) *envFlags {
	fs := flag.NewFlagSet("capture", flag.ContinueOnError)
	fs.SetOutput(out)
	return &envFlags{fs: fs, prefix: "CAPTURE_", getenv: env(e)}
}
