// Package flagkeys names the flag of each field of a settings struct by
// its toml key (flagfile's rule). It is apart from flagfile, which links
// the TOML library, so that the light CLI binary can name flags without
// initialising it.
package flagkeys

import (
	"maps"
	"reflect"
	"strings"
)

// Names maps the fields of the struct v, an embedded struct's included,
// to the flags that set them: "--" and the field's toml key with dashes
// for underscores (a field without a key has none).
func Names(v any) map[string]string {
	names := map[string]string{}
	t := reflect.TypeOf(v)
	for i := range t.NumField() {
		f := t.Field(i)
		key := f.Tag.Get("toml")
		switch {
		case f.Anonymous && f.Type.Kind() == reflect.Struct && key == "":
			maps.Copy(names, Names(reflect.Zero(f.Type).Interface()))
		case key != "" && key != "-":
			names[f.Name] = "--" + strings.ReplaceAll(key, "_", "-")
		}
	}
	return names
}
