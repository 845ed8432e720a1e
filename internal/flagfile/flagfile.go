// Package flagfile reads a command's settings from a TOML file beneath
// its command line: the file's values first, then every flag given on
// the command line again, so that the command line wins.
package flagfile

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/spf13/pflag"

	"github.com/cosched/cosched/internal/flagkeys"
)

// Load decodes the TOML file at path into v, a pointer to the struct the
// flags of fs are bound to (its toml keys are the flags' names with
// underscores for dashes), then sets the flags given on fs again. It
// returns whether a setting, by its flag's name, was given on the command
// line or in the file. An unknown key is an error; errors name the file
// by fileFlag, the flag that gave it.
func Load(fs *pflag.FlagSet, fileFlag, path string, v any) (changed func(name string) bool, err error) {
	// The command line's values, as text (lists as lists), to set again
	// over the file's.
	given := map[string][]string{}
	fs.Visit(func(fl *pflag.Flag) {
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			given[fl.Name] = slices.Clone(sv.GetSlice()) // the file may write into the slice
		} else {
			given[fl.Name] = []string{fl.Value.String()}
		}
	})
	text, err := read(path)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", fileFlag, path, err)
	}
	md, err := toml.Decode(text, v)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", fileFlag, path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, fmt.Errorf("%s %s: unknown keys: %v", fileFlag, path, und)
	}
	for name, value := range given {
		fl := fs.Lookup(name)
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			err = sv.Replace(value)
		} else {
			err = fl.Value.Set(value[0])
		}
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", name, err)
		}
	}
	return func(name string) bool {
		return given[name] != nil || md.IsDefined(strings.ReplaceAll(name, "-", "_"))
	}, nil
}

// MaxFile bounds a settings file: a larger one (/dev/zero) is none.
const MaxFile = 1 << 20

// read is the text of the file at path, at most MaxFile bytes.
func read(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFile+1))
	if err == nil && len(b) > MaxFile {
		err = fmt.Errorf("more than %d KiB: not a settings file", MaxFile>>10)
	}
	return string(b), err
}

// FlagNames maps the fields of the struct v, an embedded struct's
// included, to the flags that set them: by Load's rule, "--" and the
// field's toml key with dashes for underscores (a field without a key has
// none).
func FlagNames(v any) map[string]string { return flagkeys.Names(v) }
