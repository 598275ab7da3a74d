// Package envflag binds each setting of a command to a flag and to an
// environment variable named after it (prefix + upper-case name, dashes and
// dots as underscores), with the precedence flag > environment > default.
// Secrets have no flag: they come from an environment variable or from the
// file it names (<VAR>_FILE), so they never show in `ps`.
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

// Secret is a setting read only from the environment (or the file it
// names): its variable and its usage text.
type Secret struct{ Env, Usage string }

// New returns a Set that adds its flags to fs and reads the variables
// prefix+NAME through getenv.
func New(fs *flag.FlagSet, prefix string, getenv func(string) string) *Set {
	return &Set{fs: fs, prefix: prefix, getenv: getenv}
}

// FlagSet is the flag set the settings are bound to.
func (f *Set) FlagSet() *flag.FlagSet { return f.fs }

// Getenv reads an environment variable through the Set's getenv.
func (f *Set) Getenv(name string) string { return f.getenv(name) }

// Secrets lists the Secret settings bound so far, for the documentation:
// they have no flag.
func (f *Set) Secrets() []Secret { return f.secrets }

// Err is the errors of the environment variables read so far (nil: none),
// for a command that parses its flags itself.
func (f *Set) Err() error { return errors.Join(f.errs...) }

func (f *Set) envName(name string) string {
	r := strings.NewReplacer("-", "_", ".", "_")
	return f.prefix + strings.ToUpper(r.Replace(name))
}

func (f *Set) usage(name, usage string) string {
	return fmt.Sprintf("%s (env %s)", usage, f.envName(name))
}

// String binds a string setting.
func (f *Set) String(p *string, name, def, usage string) {
	if v := f.getenv(f.envName(name)); v != "" {
		def = v
	}
	f.fs.StringVar(p, name, def, f.usage(name, usage))
}

// Bool binds a boolean setting.
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

// Int binds an integer setting.
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

// Duration binds a duration setting (e.g. 30s).
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

// Strings binds a repeatable setting: each use of the flag adds one or
// more ';'-separated entries; the environment variable holds them all,
// ';'-separated, and is ignored once the flag is used.
func (f *Set) Strings(p *[]string, name, usage string) {
	*p = splitEntries(f.getenv(f.envName(name)))
	f.fs.Var(&stringsValue{p: p}, name, f.usage(name, usage+" (repeatable; entries may also be ';'-separated)"))
}

type stringsValue struct {
	p   *[]string
	set bool
}

func (v *stringsValue) String() string {
	if v == nil || v.p == nil {
		return ""
	}
	return strings.Join(*v.p, ";")
}

func (v *stringsValue) Set(s string) error {
	if !v.set {
		*v.p, v.set = nil, true
	}
	*v.p = append(*v.p, splitEntries(s)...)
	return nil
}

func splitEntries(s string) []string {
	var out []string
	for e := range strings.SplitSeq(s, ";") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
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
