package projection

import (
	"strings"
	"sync"
)

// maxInterned bounds each intern table. The values interned are a fleet's
// vocabulary (condition types and reasons, phases, node, namespace,
// container and interface names), a few hundred to a few thousand; a
// cluster with more distinct values than this keeps the excess as plain
// copies instead of growing the table without end.
const maxInterned = 1 << 14

// table interns values of T: equal values share one copy, so a field that
// holds one of a few hundred values costs a pointer, not a copy per object.
// Entries are never removed; the bound keeps that finite.
type table[T comparable] struct {
	mu sync.RWMutex
	m  map[T]*T
}

func (t *table[T]) intern(v T) *T {
	t.mu.RLock()
	p, ok := t.m[v]
	t.mu.RUnlock()
	if ok {
		return p
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.m[v]; ok {
		return p
	}
	p = &v
	if t.m == nil {
		t.m = map[T]*T{}
	}
	if len(t.m) < maxInterned {
		t.m[v] = p
	}
	return p
}

var symbols table[string]

// Sym is an interned string: 8 bytes in a projection, and one copy of each
// value however many objects hold it. The zero Sym is "".
type Sym struct{ p *string }

// Intern returns the Sym of s.
func Intern(s string) Sym {
	if s == "" {
		return Sym{}
	}
	return Sym{symbols.intern(s)}
}

// String returns the interned value.
func (s Sym) String() string {
	if s.p == nil {
		return ""
	}
	return *s.p
}

// optSym is an interned *string-valued field, nil kept apart from "": its
// Sym is nil when the field is, and setEmpty when it is "". 8 bytes; a
// flag beside the Sym made it 16.
type optSym struct {
	s Sym
}

// empty is the value setEmpty points at.
var empty = ""

// setEmpty is the optSym of a field set to "".
var setEmpty = optSym{s: Sym{&empty}}

// some is the optSym of v, set.
func some(v string) optSym {
	if v == "" {
		return setEmpty
	}
	return optSym{s: Intern(v)}
}

// set says the field was set.
func (o optSym) set() bool { return o.s.p != nil }

func internPtr[T ~string](p *T) optSym {
	if p == nil {
		return optSym{}
	}
	return some(string(*p))
}

func symPtr[T ~string](o optSym) *T {
	if !o.set() {
		return nil
	}
	v := T(o.s.String())
	return &v
}

// wordSep joins the words of one interned value (a claim's access modes, a
// condition's type and status): none of those words holds it.
const wordSep = "\x00"

// internWords interns words joined by wordSep, in their order: a fleet
// has a few combinations. No words is the zero Sym.
func internWords[T ~string](words []T) Sym {
	parts := make([]string, len(words))
	for i, w := range words {
		parts[i] = string(w)
	}
	return Intern(strings.Join(parts, wordSep))
}

// splitWords is the words internWords joined into s; nil for the zero Sym.
func splitWords(s Sym) []string {
	if s.String() == "" {
		return nil
	}
	return strings.Split(s.String(), wordSep)
}
