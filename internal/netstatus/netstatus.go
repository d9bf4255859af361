// Package netstatus reads Multus' k8s.v1.cni.cncf.io/network-status pod
// annotation: the engine on every evaluation, the pod projection once per
// pod change (to keep the entries instead of the text).
package netstatus

import (
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"
)

// maxStatusEntries bounds what one annotation may list; a launcher pod
// has one entry per VMI network (KubeVirt caps interfaces well below this).
const maxStatusEntries = 256

// maxJSONDepth bounds nesting inside fields the engine skips (dns,
// device-info): Multus nests three levels at most.
const maxJSONDepth = 32

var (
	errNetStatusSyntax = errors.New("network-status is not valid JSON")
	errNetStatusShape  = errors.New("network-status is not a JSON list of network status objects")
	errNetStatusTooBig = errors.New("network-status lists too many networks")
)

// Status is the part of one Multus network-status entry that vmobs reads
// (network-attachment-definition-client types.go NetworkStatus).
type Status struct {
	Name      string
	Interface string
	IPs       []string
	MAC       string
	Default   bool
}

// Parse reads the Multus k8s.v1.cni.cncf.io/network-status
// annotation: a JSON list of {name, interface, ips, mac, default, ...}.
//
// It is a small purpose-built reader rather than encoding/json because it
// runs on every evaluation of every VM: strings without escapes are sliced
// from the input instead of copied, which keeps the engine within its
// allocation budget. Where both accept an input they agree (a fuzz test
// checks it against encoding/json): keys match case-insensitively, the last
// duplicate wins, null leaves a field as it was, unknown fields are skipped.
// It is stricter in one way: a known field of the wrong type is an error.
//
//nolint:gocyclo // One pass of a JSON scanner over an array of objects, fuzz-tested against encoding/json; split, its stack buffers would escape to the heap.
func Parse(s string) ([]Status, error) {
	p := nsParser{s: s}
	p.ws()
	if p.lit("null") {
		p.ws()
		if p.i != len(p.s) {
			return nil, errNetStatusSyntax
		}
		return nil, nil
	}
	if !p.eat('[') {
		if p.i < len(p.s) && p.s[p.i] == '{' {
			return nil, errNetStatusShape
		}
		return nil, errNetStatusSyntax
	}
	// Entries and IPs collect in stack buffers and are copied once into
	// exactly sized slices; IPs of all entries share one backing array, each
	// entry recording its span until the array stops growing.
	type span struct{ from, to int }
	var (
		outBuf  [4]Status
		spanBuf [4]span
		ipBuf   [8]string
	)
	out, spans, ips := outBuf[:0], spanBuf[:0], ipBuf[:0]
	p.ws()
	if !p.eat(']') {
		for {
			p.ws()
			if len(out) == maxStatusEntries {
				return nil, errNetStatusTooBig
			}
			var e Status
			sp := span{-1, -1}
			if p.lit("null") {
				// encoding/json decodes null into a zero element.
			} else {
				if !p.eat('{') {
					// A well-formed value of another type is a shape
					// error; anything else is a syntax error.
					p.skip(0)
					return nil, p.fail(errNetStatusShape)
				}
				p.ws()
				if !p.eat('}') {
					for {
						key, ok := p.key()
						if !ok {
							return nil, p.err
						}
						switch {
						case strings.EqualFold(key, "name"):
							p.strField(&e.Name)
						case strings.EqualFold(key, "interface"):
							p.strField(&e.Interface)
						case strings.EqualFold(key, "mac"):
							p.strField(&e.MAC)
						case strings.EqualFold(key, "default"):
							p.boolField(&e.Default)
						case strings.EqualFold(key, "ips"):
							if p.lit("null") {
								// null resets a slice in encoding/json.
								sp = span{-1, -1}
								break
							}
							if !p.eat('[') {
								p.fail(errNetStatusShape)
								break
							}
							from := len(ips)
							p.ws()
							if !p.eat(']') {
								for {
									p.ws()
									if p.lit("null") {
										// encoding/json leaves a null
										// slice element as "".
										ips = append(ips, "")
									} else {
										v, ok := p.str()
										if !ok {
											p.fail(errNetStatusShape)
											break
										}
										ips = append(ips, v)
									}
									if !p.next(']') {
										break
									}
								}
							}
							sp = span{from, len(ips)}
						default:
							p.skip(0)
						}
						if !p.next('}') {
							break
						}
					}
					if p.err != nil {
						return nil, p.err
					}
				}
			}
			out = append(out, e)
			spans = append(spans, sp)
			if !p.next(']') {
				break
			}
		}
	}
	p.ws()
	if p.err != nil {
		return nil, p.err
	}
	if p.i != len(p.s) {
		return nil, errNetStatusSyntax
	}
	res := make([]Status, len(out))
	copy(res, out)
	var allIPs []string
	if len(ips) > 0 {
		allIPs = make([]string, len(ips))
		copy(allIPs, ips)
	}
	for i, sp := range spans {
		if sp.from >= 0 {
			res[i].IPs = allIPs[sp.from:sp.to:sp.to]
		}
	}
	return res, nil
}

// nsParser is a cursor over the annotation; err is sticky so that the
// value-level helpers can report without unwinding by hand.
type nsParser struct {
	s   string
	i   int
	err error
}

func (p *nsParser) fail(err error) error {
	if p.err == nil {
		p.err = err
	}
	return p.err
}

func (p *nsParser) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *nsParser) eat(c byte) bool {
	if p.err == nil && p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// key reads an object member's key and its colon, and the white space
// around them.
func (p *nsParser) key() (string, bool) {
	p.ws()
	k, ok := p.str()
	if !ok {
		p.fail(errNetStatusSyntax)
		return "", false
	}
	p.ws()
	if !p.eat(':') {
		p.fail(errNetStatusSyntax)
		return "", false
	}
	p.ws()
	return k, true
}

// enter steps into the array or object whose opening byte is next and
// says whether an element follows (false for [] and {}).
func (p *nsParser) enter(closing byte) bool {
	p.i++
	p.ws()
	return !p.eat(closing)
}

// next ends an element of an array or object: true when a comma says
// another follows, false at the closing byte or on an error (recorded; the
// first one stands).
func (p *nsParser) next(closing byte) bool {
	p.ws()
	if p.eat(',') {
		return true
	}
	if !p.eat(closing) {
		p.fail(errNetStatusSyntax)
	}
	return false
}

func (p *nsParser) lit(l string) bool {
	if p.err == nil && strings.HasPrefix(p.s[p.i:], l) {
		p.i += len(l)
		return true
	}
	return false
}

func (p *nsParser) strField(dst *string) {
	if p.lit("null") {
		return
	}
	v, ok := p.str()
	if !ok {
		p.fail(errNetStatusShape)
		return
	}
	*dst = v
}

func (p *nsParser) boolField(dst *bool) {
	switch {
	case p.lit("null"):
	case p.lit("true"):
		*dst = true
	case p.lit("false"):
		*dst = false
	default:
		p.fail(errNetStatusShape)
	}
}

// str reads a JSON string. Plain strings are sliced from the input; those
// with escapes or invalid UTF-8 are decoded by encoding/json so that both
// agree on every corner (surrogates, U+FFFD replacement).
func (p *nsParser) str() (string, bool) {
	if p.err != nil || p.i >= len(p.s) || p.s[p.i] != '"' {
		return "", false
	}
	start := p.i
	// Fast path: ASCII without escapes up to the closing quote, which is
	// what Multus writes.
	if q := strings.IndexByte(p.s[start+1:], '"'); q >= 0 {
		seg := p.s[start+1 : start+1+q]
		clean := true
		for k := 0; k < len(seg); k++ {
			if c := seg[k]; c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
				clean = false
				break
			}
		}
		if clean {
			p.i = start + q + 2
			return seg, true
		}
	}
	plain := true
	j := p.i + 1
	for j < len(p.s) {
		c := p.s[j]
		switch {
		case c == '"':
			p.i = j + 1
			if plain {
				return p.s[start+1 : j], true
			}
			var v string
			if err := json.Unmarshal([]byte(p.s[start:p.i]), &v); err != nil {
				p.fail(errNetStatusSyntax)
				return "", false
			}
			return v, true
		case c == '\\':
			plain = false
			if j+1 >= len(p.s) {
				p.fail(errNetStatusSyntax)
				return "", false
			}
			j += 2
		case c < 0x20:
			p.fail(errNetStatusSyntax)
			return "", false
		case c < utf8.RuneSelf:
			j++
		default:
			r, size := utf8.DecodeRuneInString(p.s[j:])
			if r == utf8.RuneError && size == 1 {
				plain = false
			}
			j += size
		}
	}
	p.fail(errNetStatusSyntax)
	return "", false
}

// skip reads and discards one JSON value of any type.
func (p *nsParser) skip(depth int) {
	if depth > maxJSONDepth {
		p.fail(errNetStatusSyntax)
		return
	}
	if p.i >= len(p.s) {
		p.fail(errNetStatusSyntax)
		return
	}
	switch c := p.s[p.i]; {
	case c == '"':
		if _, ok := p.str(); !ok {
			p.fail(errNetStatusSyntax)
		}
	case c == '{':
		for more := p.enter('}'); more; more = p.next('}') {
			if _, ok := p.key(); !ok {
				return
			}
			p.skip(depth + 1)
		}
	case c == '[':
		for more := p.enter(']'); more; more = p.next(']') {
			p.ws()
			p.skip(depth + 1)
		}
	case c == 't':
		if !p.lit("true") {
			p.fail(errNetStatusSyntax)
		}
	case c == 'f':
		if !p.lit("false") {
			p.fail(errNetStatusSyntax)
		}
	case c == 'n':
		if !p.lit("null") {
			p.fail(errNetStatusSyntax)
		}
	case c == '-' || (c >= '0' && c <= '9'):
		p.number()
	default:
		p.fail(errNetStatusSyntax)
	}
}

// number accepts exactly the JSON number grammar: an integer part without
// leading zeros, then an optional fraction and exponent, each with at least
// one digit.
func (p *nsParser) number() {
	s, i := p.s, p.i
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = digits(s, i)
	default:
		p.fail(errNetStatusSyntax)
		return
	}
	ok := true
	if i < len(s) && s[i] == '.' {
		i, ok = someDigits(s, i+1)
	}
	if ok && i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		i, ok = someDigits(s, i)
	}
	if !ok {
		p.fail(errNetStatusSyntax)
		return
	}
	p.i = i
}

// digits skips the decimal digits of s from i.
func digits(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// someDigits skips the decimal digits of s from i, of which a fraction and
// an exponent need one at least.
func someDigits(s string, i int) (int, bool) {
	j := digits(s, i)
	return j, j > i
}
