package verdict

import "github.com/vmobs/vmobs/internal/vmifacts"

// sourceFacts are the facts a source outside the cluster's objects (domain
// stats, the guest probe) folds for one VMI (vmifacts.Scoped).
type sourceFacts interface {
	*vmifacts.DomainFacts | *vmifacts.GuestFacts
	vmifacts.Scoped
}

// vmiFacts is the one gate between a source's facts and the rules: they are
// read only while the VMI runs, and only when they were folded for this VMI,
// not for an earlier one of the same name. Every producer stamps the VMI's
// UID, also on the facts that say the source is unavailable; unavailable
// facts without a UID (a caller that knows only the outage) are read too,
// since an outage is the whole fleet's.
func vmiFacts[F sourceFacts](f *facts, sf F) F {
	if sf == nil || f.lc != lcRunning || f.vmi == nil {
		return nil
	}
	uid, unavailable := sf.Scope()
	if (uid != "" && uid == f.vmi.UID) || (uid == "" && unavailable != "") {
		return sf
	}
	return nil
}

// vmiData are the facts vmiFacts gives when they hold data: readable (the
// source is not unavailable) and with something of this VMI to report.
func vmiData[F sourceFacts](f *facts, sf F) F {
	if sf = vmiFacts(f, sf); sf == nil {
		return nil
	}
	if _, unavailable := sf.Scope(); unavailable != "" || !sf.HasData() {
		return nil
	}
	return sf
}
