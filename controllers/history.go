package controllers

import (
	"github.com/go-logr/logr"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/history"
)

// logHistory writes one log line per history entry a status write added,
// oldest first, with the stable keys of history.LogKeys (docs/history.md),
// for log stores that keep a VM's timeline longer than its status does.
func logHistory(log logr.Logger, added []v1alpha1.HistoryEntry) {
	for i := len(added) - 1; i >= 0; i-- {
		log.Info(history.LogMessage, history.LogKeys(&added[i])...)
	}
}
