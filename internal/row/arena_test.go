package row

import (
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func TestBoxAtIsIndistinguishableFromAConversion(t *testing.T) {
	fs := []float64{2.5, math.Inf(-1), -0.0, math.MaxFloat64}
	is := []int64{1 << 40, math.MinInt64, -1}
	ss := []string{"dev1", "", "héllo 世界"}
	var boxed, plain []any
	for i := range fs {
		boxed, plain = append(boxed, boxAt(&fs[i])), append(plain, any(fs[i]))
	}
	for i := range is {
		boxed, plain = append(boxed, boxAt(&is[i])), append(plain, any(is[i]))
	}
	for i := range ss {
		boxed, plain = append(boxed, boxAt(&ss[i])), append(plain, any(ss[i]))
	}
	seen := map[any]int{}
	for i := range plain {
		b, p := boxed[i], plain[i]
		if b != p {
			t.Errorf("boxAt %#v != any %#v", b, p)
		}
		if reflect.TypeOf(b) != reflect.TypeOf(p) || !reflect.DeepEqual(b, p) {
			t.Errorf("reflect sees %T %#v, want %T %#v", b, b, p, p)
		}
		if fmt.Sprint(b) != fmt.Sprint(p) {
			t.Errorf("fmt prints %v, want %v", b, p)
		}
		seen[p] = i
		if j, ok := seen[b]; !ok || j != i {
			t.Errorf("as a map key %#v finds %d, %v", b, j, ok)
		}
	}
	switch boxed[0].(type) {
	case float64:
	default:
		t.Errorf("type switch on a boxed float64 sees %T", boxed[0])
	}
	if n := testing.AllocsPerRun(100, func() { _ = boxAt(&fs[0]); _ = boxAt(&is[0]); _ = boxAt(&ss[0]) }); n != 0 {
		t.Errorf("boxAt allocates %v times", n)
	}
}

// arenaValues fills an arena with n records of each kind, spanning many
// chunks, and returns the values with what they should hold.
func arenaValues(a *Arena, n int) (got, want []any) {
	for i := range n {
		f := float64(i) + 0.5
		got, want = append(got, a.Float(f)), append(want, f)
		v := int64(i)*1_000_003 - 7
		got, want = append(got, a.Int(v)), append(want, v)
		s := fmt.Sprintf("value-%d-%s", i, strings.Repeat("x", i%300)) // some longer than maxArenaText
		got, want = append(got, a.String([]byte(s))), append(want, s)
	}
	return got, want
}

func TestArenaValuesSurviveGCAndLaterWrites(t *testing.T) {
	var a Arena
	got, want := arenaValues(&a, 1000)
	// Drop the arena's own references to its chunks, churn the heap and
	// collect: the values alone must keep their chunks alive and intact.
	a = Arena{}
	for range 3 {
		garbage := make([][]byte, 0, 1000)
		for range 1000 {
			garbage = append(garbage, make([]byte, 512))
		}
		_ = garbage
		runtime.GC()
	}
	more, _ := arenaValues(&a, 1000) // reuses no chunk of the first fill
	_ = more
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("value %d is %#v, want %#v", i, got[i], want[i])
		}
	}
}

func TestArenaStringCopies(t *testing.T) {
	var a Arena
	b := []byte("payload")
	v := a.String(b)
	copy(b, "XXXXXXX")
	if v != "payload" {
		t.Errorf("String shares the caller's bytes: %v", v)
	}
	if v := a.String(nil); v != "" {
		t.Errorf("String(nil) = %#v", v)
	}
}

func TestArenaAmortizesAllocations(t *testing.T) {
	var a Arena
	l := NewLayout([]string{"deviceId", "temperature", "humidity", "status"})
	dev, status := []byte("dev12"), []byte("ok")
	n := testing.AllocsPerRun(1000, func() {
		tu := a.Tuple(l)
		tu.Put(0, a.String(dev))
		tu.Put(1, a.Float(23.5))
		tu.Put(2, a.Int(55))
		tu.Put(3, a.String(status))
	})
	// One record takes a tuple, four slots, a float, two strings: chunks
	// of 64, 64, 32 and 32 make that about a fifth of an allocation.
	if n > 0.3 {
		t.Errorf("a record costs %.2f allocations, want at most 0.3", n)
	}
}

func TestArenaTuplesAreIndependent(t *testing.T) {
	var a Arena
	l := NewLayout([]string{"a", "b"})
	var ts []*Tuple
	for i := range 200 { // beyond a chunk of tuples and of slots
		tu := a.Tuple(l)
		if v, ok := tu.Value("", "a"); ok || v != nil {
			t.Fatalf("a fresh tuple has column a = %v", v)
		}
		tu.Put(0, a.Int(int64(i)))
		if i%2 == 0 {
			tu.Put(1, nil)
		}
		ts = append(ts, tu)
	}
	for i, tu := range ts {
		if v, _ := tu.Value("", "a"); v != int64(i) {
			t.Fatalf("tuple %d has a = %v", i, v)
		}
		if _, ok := tu.Value("", "b"); ok != (i%2 == 0) {
			t.Fatalf("tuple %d: b present = %v", i, ok)
		}
	}
}

func TestArenaValuesReadConcurrently(t *testing.T) {
	var a Arena
	got, want := arenaValues(&a, 200)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("value %d is %#v", i, got[i])
					return
				}
			}
		})
	}
	// The producer goes on filling the same chunks meanwhile.
	arenaValues(&a, 200)
	wg.Wait()
}

// TestArenaKeepAndRecycle: what a window ended by Keep hands out stays
// intact however many windows are recycled after it; recycled windows
// reuse their chunks (no allocation once warm), hand out zeroed tuples and
// slots, and in poisoning builds (-race) a value read after Recycle shows
// the poison.
func TestArenaKeepAndRecycle(t *testing.T) {
	var a Arena
	a.Recycle() // an arena tracks its windows from its first Recycle on
	l := NewLayout([]string{"a", "b", "c"})
	keptT := a.Tuple(l)
	keptT.Put(0, a.Float(1.5))
	keptT.Put(1, a.String([]byte("kept")))
	kept, keptWant := arenaValues(&a, 300)
	a.Keep()
	gone, goneWant := arenaValues(&a, 300)
	goneT := a.Tuple(l)
	goneT.Put(2, a.String([]byte("gone")))
	a.Recycle()
	if poisonRecycled {
		// The chunk that was being filled at Keep is left to the GC when
		// full, not reused: its values stay. Every other is poisoned.
		poisoned := 0
		for i := range gone {
			if gone[i] != goneWant[i] {
				poisoned++
			}
		}
		if poisoned < len(gone)*3/4 {
			t.Fatalf("%d of %d recycled values read garbage in a poisoning build, want most", poisoned, len(gone))
		}
	}
	window := func() {
		got, want := arenaValues(&a, 300)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("value %d of a recycled window is %#v, want %#v", i, got[i], want[i])
			}
		}
		tu := a.Tuple(l)
		for i := range 3 {
			if v := tu.rec.slots[i]; v != nil {
				t.Fatalf("slot %d of a new tuple is present", i)
			}
		}
		tu.Put(0, a.Int(1<<40))
		m := a.Map(4)
		if len(m) != 0 {
			t.Fatalf("a new map holds %v", m)
		}
		m["x"] = a.Float(2.5)
		a.Recycle()
	}
	for range 5 {
		window()
	}
	for i := range kept {
		if kept[i] != keptWant[i] {
			t.Fatalf("kept value %d is %#v after recycling, want %#v", i, kept[i], keptWant[i])
		}
	}
	if v := keptT.rec.slots[0]; v != 1.5 {
		t.Fatalf("kept tuple's slot 0 is %#v", v)
	}
	if v := keptT.rec.slots[1]; v != "kept" {
		t.Fatalf("kept tuple's slot 1 is %#v", v)
	}
	// arenaValues itself allocates (fmt, its slices): count a window of
	// the arena alone.
	bs := [][]byte{[]byte("dev1"), []byte("a somewhat longer status string")}
	if n := testing.AllocsPerRun(100, func() {
		for i := range 200 {
			tu := a.Tuple(l)
			tu.Put(0, a.Float(float64(i)+0.5))
			tu.Put(1, a.String(bs[i%2]))
			tu.Put(2, a.Int(int64(i)<<20))
			a.Map(2)["k"] = a.Int(-int64(i) - 300)
		}
		a.Recycle()
	}); n != 0 {
		t.Fatalf("a recycled window of 200 tuples allocates %v times", n)
	}
}

// TestArenaWithoutRecycleTracksNothing: an owner that never calls Recycle
// (nor Keep) leaves every filled chunk and map to the GC, as before
// recycling existed: the arena holds on to none of them.
func TestArenaWithoutRecycleTracksNothing(t *testing.T) {
	var a Arena
	l := NewLayout([]string{"a"})
	for i := range 10000 {
		a.Tuple(l).Put(0, a.Float(float64(i)))
		a.Map(1)["k"] = a.String([]byte("text"))
	}
	if n := len(a.tuples.full) + len(a.records.full) + len(a.slots.full) + len(a.floats.full) + len(a.strs.full) + len(a.text.full) + len(a.maps); n != 0 {
		t.Fatalf("the arena holds %d filled chunks and maps", n)
	}
	a.Recycle()
	for i := range 10000 {
		a.Tuple(l).Put(0, a.Float(float64(i)))
		a.Map(1)["k"] = a.String([]byte("text"))
	}
	if n := len(a.tuples.full); n > maxWindow {
		t.Fatalf("a window tracks %d tuple chunks, want at most %d", n, maxWindow)
	}
	if n := len(a.maps); n > maxWindowMaps {
		t.Fatalf("a window tracks %d maps, want at most %d", n, maxWindowMaps)
	}
}
