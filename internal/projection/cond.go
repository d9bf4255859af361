package projection

import "strings"

// Cond is a compact condition of a pod, node, VM or VMI, 32 bytes: its
// type and status one interned word, its reason interned, its message
// behind a pointer, nil for none (most conditions have none: 8 bytes
// instead of 16 for every one). A VM, its VMI and its launcher pod hold
// about ten conditions; as three interned words and a string they cost 48
// bytes each. Only a VMI's conditions keep their lastProbeTime (VMICond):
// the engine reads it of none other.
type Cond struct {
	// word is type, wordSep, status, split at the last wordSep: a type
	// that holds it (bad input) still reads back whole.
	word           Sym
	Reason         Sym
	message        *string
	LastTransition Time
}

func newCond(typ, status, reason, message string, t Time) Cond {
	c := Cond{word: Intern(typ + wordSep + status), Reason: Intern(reason), LastTransition: t}
	if message != "" {
		c.message = &message
	}
	return c
}

// Type is the condition's type.
func (c Cond) Type() string {
	w := c.word.String()
	return w[:max(strings.LastIndex(w, wordSep), 0)]
}

// Status is the condition's status.
func (c Cond) Status() string {
	w := c.word.String()
	return w[strings.LastIndex(w, wordSep)+1:]
}

// Message is the condition's message.
func (c Cond) Message() string {
	if c.message == nil {
		return ""
	}
	return *c.message
}

func condsOf[C any](in []C, keepType func(string) bool, conv func(*C) Cond) []Cond {
	n := 0
	for i := range in {
		if c := conv(&in[i]); keepType(c.Type()) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]Cond, 0, n)
	for i := range in {
		if c := conv(&in[i]); keepType(c.Type()) {
			out = append(out, c)
		}
	}
	return out
}

func all(string) bool { return true }
