package sdk

import (
	"reflect"
	"testing"
	"time"
)

// TestSpecConvertsEveryField fills every field of the sdk's spec types and
// checks that the engine's spec holds the same value under the same name,
// so that a field added to Prop or Spec cannot be dropped on the way in.
func TestSpecConvertsEveryField(t *testing.T) {
	p := Prop{
		Name: "timeout", Type: TypeDuration, Default: "1s", Enum: []any{"1s", "2s"},
		Required: true, Secret: true, Doc: "how long", Max: 5 * time.Second, Target: true,
	}
	s := Spec{Props: []Prop{p}, WritesRows: true, Ping: true}
	in := s.internal()
	if len(in.Props) != 1 {
		t.Fatalf("converted %d props, want 1", len(in.Props))
	}
	sameFields(t, reflect.ValueOf(p), reflect.ValueOf(in.Props[0]))
	sameFields(t, reflect.ValueOf(s), reflect.ValueOf(in))

	in.Props[0].Enum[0] = "9s"
	if p.Enum[0] != "1s" {
		t.Fatal("the engine's spec shares the extension's Enum slice")
	}
}

// sameFields checks that every field of pub but Props, which must be set,
// has an equal field of the same name in eng.
func sameFields(t *testing.T, pub, eng reflect.Value) {
	t.Helper()
	for i := range pub.NumField() {
		f := pub.Type().Field(i)
		v := pub.Field(i)
		if v.IsZero() {
			t.Fatalf("%s.%s is not set by the test", pub.Type().Name(), f.Name)
		}
		if f.Name == "Props" {
			continue
		}
		e := eng.FieldByName(f.Name)
		if !e.IsValid() {
			t.Fatalf("%s.%s has no counterpart in the engine's spec", pub.Type().Name(), f.Name)
		}
		if pv, ev := v.Interface(), e.Interface(); reflect.TypeOf(pv).Kind() == reflect.String {
			if reflect.ValueOf(pv).String() != reflect.ValueOf(ev).String() {
				t.Errorf("%s.%s = %v, converted to %v", pub.Type().Name(), f.Name, pv, ev)
			}
		} else if !reflect.DeepEqual(pv, ev) {
			t.Errorf("%s.%s = %v, converted to %v", pub.Type().Name(), f.Name, pv, ev)
		}
	}
}
