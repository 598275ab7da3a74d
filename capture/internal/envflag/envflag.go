// Package envflag binds each setting of a binary to a command-line flag and
// to an environment variable named after it, with secrets read only from
// the environment or from a file. capture's commands and its settings
// packages (config, kafkasec, registrysec) bind through it.
package envflag

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Set binds each setting to a flag and to an environment variable named
// after it (prefix + upper-case name, dashes and dots as underscores). The
// precedence is flag > environment > default. Secrets have no flag: they come
// from an environment variable or from the file named by <VAR>_FILE.
type Set struct {
	fs     *flag.FlagSet
	prefix string
	getenv func(string) string
	errs   []error
	// secrets lists the Secret settings (their variable and usage), for
	// the documentation: they have no flag.
	secrets []Secret
}

// Secret is a setting read only from the environment (or a file): its
// variable and its usage text.
type Secret struct{ Env, Usage string }

// New binds settings to fs, their variables named prefix + the flag name
// (upper case, dashes and dots as underscores) and read with getenv.
func New(fs *flag.FlagSet, prefix string, getenv func(string) string) *Set {
	return &Set{fs: fs, prefix: prefix, getenv: getenv}
}

// FlagSet is the flag set the settings are bound to.
func (f *Set) FlagSet() *flag.FlagSet { return f.fs }

// Getenv reads an environment variable through the Set's getenv.
func (f *Set) Getenv(name string) string { return f.getenv(name) }

// Secrets lists the Secret settings, for the documentation: they have no
// flag.
func (f *Set) Secrets() []Secret { return f.secrets }

// Err is the errors of the environment variables read so far (nil: none).
func (f *Set) Err() error { return errors.Join(f.errs...) }

func (f *Set) envName(name string) string {
	r := strings.NewReplacer("-", "_", ".", "_")
	return f.prefix + strings.ToUpper(r.Replace(name))
}

func (f *Set) usage(name, usage string) string {
	return fmt.Sprintf("%s (env %s)", usage, f.envName(name))
}

func (f *Set) String(p *string, name, def, usage string) {
	if v := f.getenv(f.envName(name)); v != "" {
		def = v
	}
	f.fs.StringVar(p, name, def, f.usage(name, usage))
}

func (f *Set) Bool(p *bool, name string, def bool, usage string) {
	if v := f.getenv(f.envName(name)); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			f.errs = append(f.errs, fmt.Errorf("%s=%q: not a boolean", f.envName(name), v))
		} else {
			def = b
		}
	}
	f.fs.BoolVar(p, name, def, f.usage(name, usage))
}

func (f *Set) Int(p *int, name string, def int, usage string) {
	if v := f.getenv(f.envName(name)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			f.errs = append(f.errs, fmt.Errorf("%s=%q: not an integer", f.envName(name), v))
		} else {
			def = n
		}
	}
	f.fs.IntVar(p, name, def, f.usage(name, usage))
}

func (f *Set) Duration(p *time.Duration, name string, def time.Duration, usage string) {
	if v := f.getenv(f.envName(name)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			f.errs = append(f.errs, fmt.Errorf("%s=%q: not a duration (e.g. 30s)", f.envName(name), v))
		} else {
			def = d
		}
	}
	f.fs.DurationVar(p, name, def, f.usage(name, usage))
}

// Parse parses args (the command's arguments after its name) and returns
// the first flag error or the errors of the environment variables read. A
// command takes no positional arguments: one is a mistyped setting.
func (f *Set) Parse(args []string) error {
	if err := f.fs.Parse(args); err != nil {
		return err
	}
	if f.fs.NArg() > 0 {
		return fmt.Errorf("%s takes no arguments, got %q (settings are flags or environment variables)", f.fs.Name(), f.fs.Args())
	}
	return errors.Join(f.errs...)
}

// Secret reads a secret from <PREFIX><NAME> or from the file named by
// <PREFIX><NAME>_FILE. It never has a flag, so it never shows in `ps`.
func (f *Set) Secret(p *string, name, usage string) {
	key := f.envName(name)
	f.secrets = append(f.secrets, Secret{key, usage})
	if v := f.getenv(key); v != "" {
		*p = v
		return
	}
	if file := f.getenv(key + "_FILE"); file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			f.errs = append(f.errs, fmt.Errorf("reading %s_FILE: %w", key, err))
			return
		}
		*p = strings.TrimRight(string(b), "\r\n")
	}
}
