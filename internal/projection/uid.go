package projection

import (
	"encoding/hex"

	"k8s.io/apimachinery/pkg/types"
)

// UID is a types.UID in 16 bytes when it is a UUID as the API server writes
// them (lowercase hex, dashed), else kept as the string. A VM's objects
// carry about ten UIDs (their own, owner references, the created-by and
// migration labels, activePods): as strings, 64 bytes each.
type UID struct {
	id    [16]byte
	other *string
}

func uidOf(u types.UID) UID {
	s := string(u)
	if s == "" {
		return UID{}
	}
	var out UID
	if len(s) == 36 && s[8] == '-' && s[13] == '-' && s[18] == '-' && s[23] == '-' {
		var raw [32]byte
		n := 0
		for i := 0; i < len(s); i++ {
			if s[i] != '-' {
				if n == len(raw) {
					break
				}
				raw[n] = s[i]
				n++
			}
		}
		// The zero UUID would read back as no UID: it stays a string.
		if _, err := hex.Decode(out.id[:], raw[:n]); err == nil && n == 32 && out.id != ([16]byte{}) && out.UID() == u {
			return out
		}
	}
	return UID{other: &s}
}

// UID is u as a types.UID.
func (u UID) UID() types.UID {
	if u.other != nil {
		return types.UID(*u.other)
	}
	if u.id == ([16]byte{}) {
		return ""
	}
	var b [36]byte
	hex.Encode(b[:], u.id[:4])
	b[8] = '-'
	hex.Encode(b[9:13], u.id[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u.id[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u.id[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u.id[10:])
	return types.UID(b[:])
}

// IsZero says whether u is the empty UID.
func (u UID) IsZero() bool { return u.other == nil && u.id == ([16]byte{}) }
