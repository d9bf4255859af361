package analyze

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// DefaultMaxFileSize is the largest file Load reads unless told otherwise.
const DefaultMaxFileSize = 64 << 20

// maxErrorsPerFile bounds what one broken file can print.
const maxErrorsPerFile = 10

// maxListDepth bounds Lists nested in Lists.
const maxListDepth = 4

// Options tunes Load.
type Options struct {
	// MaxFileSize is the largest file read, in bytes; 0 means
	// DefaultMaxFileSize.
	MaxFileSize int64
	// Stdin is read for the path "-"; nil means os.Stdin.
	Stdin io.Reader
}

// Objects are the typed objects Load found, one copy per object, each list
// sorted by namespace and name.
type Objects struct {
	VMs          []*kubevirtv1.VirtualMachine
	VMIs         []*kubevirtv1.VirtualMachineInstance
	Migrations   []*kubevirtv1.VirtualMachineInstanceMigration
	Pods         []*corev1.Pod
	Nodes        []*corev1.Node
	Observations []*v1alpha1.VMObservation
	Policies     []*v1alpha1.VMObservationPolicy
	// The storage layer's objects: claims, StorageClasses,
	// VolumeAttachments, CDI DataVolumes (as unstructured content) and
	// Events (core/v1, as a must-gather's events.yaml holds them).
	PVCs              []*corev1.PersistentVolumeClaim
	StorageClasses    []*storagev1.StorageClass
	VolumeAttachments []*storagev1.VolumeAttachment
	DataVolumes       []*unstructured.Unstructured
	Events            []*corev1.Event
}

// FileError says why (part of) a file could not be used.
type FileError struct {
	Path   string
	Reason string
}

func (e FileError) Error() string { return e.Path + ": " + e.Reason }

// Report says what Load read and what it could not use.
type Report struct {
	// Files is the number of files read.
	Files int
	// SkippedFiles counts files found while walking a directory that were
	// not read: not named *.yaml, *.yml or *.json (logs, XML, text dumps),
	// or symbolic links to directories.
	SkippedFiles int
	// Documents is the number of YAML or JSON documents parsed.
	Documents int
	// Loaded counts the objects of known kinds decoded, by kind, copies
	// included.
	Loaded map[string]int
	// Duplicates counts copies merged away (see the package doc).
	Duplicates int
	// Ignored counts objects of other kinds, by "Kind.group" ("Event",
	// "DataVolume.cdi.kubevirt.io").
	Ignored map[string]int
	// NotObjects counts documents that are not Kubernetes objects (no
	// apiVersion and kind), such as configuration files in a must-gather.
	NotObjects int
	// Errors lists what could not be read or converted, in the order met.
	Errors []FileError
}

// Load reads the files and directories named by paths and returns the
// objects of the kinds vmobs reads. Other kinds are counted and dropped.
// What cannot be read is reported per file in Report.Errors; it never stops
// the rest, and Load does not panic on any input.
func Load(paths []string, opts Options) (Objects, Report) {
	if opts.MaxFileSize <= 0 {
		opts.MaxFileSize = DefaultMaxFileSize
	}
	l := &loader{
		opts: opts,
		rep:  Report{Loaded: map[string]int{}, Ignored: map[string]int{}},
		objs: map[objKey]metav1.Object{},
	}
	for _, p := range paths {
		l.path(p)
	}
	return l.objects(), l.rep
}

// Decode reads the YAML or JSON content of one file, as Load does; name is
// used in errors and for namespace defaults.
func Decode(name string, data []byte) (Objects, Report) {
	l := &loader{
		opts: Options{MaxFileSize: DefaultMaxFileSize},
		rep:  Report{Loaded: map[string]int{}, Ignored: map[string]int{}},
		objs: map[objKey]metav1.Object{},
	}
	l.rep.Files++
	l.content(name, data, true)
	return l.objects(), l.rep
}

type objKey struct{ kind, namespace, name string }

type loader struct {
	opts Options
	rep  Report
	objs map[objKey]metav1.Object
	// fileErrors counts the errors of the file being read.
	fileErrors int
	// fileObjects counts the objects (any kind) of the file being read.
	fileObjects int
	// doc locates the document being decoded in errors: "document 2
	// (line 40): ", or "" in a one-document file.
	doc string
}

// failDoc is fail for an object of the document being decoded.
func (l *loader) failDoc(path, format string, args ...any) {
	l.fail(path, l.doc+format, args...)
}

func (l *loader) fail(path, format string, args ...any) {
	l.fileErrors++
	switch {
	case l.fileErrors <= maxErrorsPerFile:
		l.rep.Errors = append(l.rep.Errors, FileError{Path: path, Reason: fmt.Sprintf(format, args...)})
	case l.fileErrors == maxErrorsPerFile+1:
		l.rep.Errors = append(l.rep.Errors, FileError{Path: path, Reason: "more errors in this file; not shown"})
	}
}

// path reads one command-line argument: a file, or a directory walked
// recursively.
func (l *loader) path(p string) {
	if p == "-" {
		in := l.opts.Stdin
		if in == nil {
			in = os.Stdin
		}
		l.read("<stdin>", in, true)
		return
	}
	fi, err := os.Stat(p)
	if err != nil {
		l.fileErrors = 0
		l.fail(p, "%s", errReason(err))
		return
	}
	if !fi.IsDir() {
		l.file(p, true)
		return
	}
	_ = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			l.fileErrors = 0
			l.fail(path, "%s", errReason(err))
			if d != nil && d.IsDir() && path != p {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if path != p && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		if !objectFileName(d.Name()) {
			l.rep.SkippedFiles++
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			// Follow links to files, not to directories (no loops).
			if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
				l.rep.SkippedFiles++
				return nil
			}
		} else if !d.Type().IsRegular() {
			l.rep.SkippedFiles++
			return nil
		}
		l.file(path, false)
		return nil
	})
}

func objectFileName(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// errReason drops the operation and path that os errors repeat.
func errReason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func (l *loader) file(path string, explicit bool) {
	l.fileErrors, l.fileObjects = 0, 0
	f, err := os.Open(path)
	if err != nil {
		l.fail(path, "%s", errReason(err))
		return
	}
	defer func() { _ = f.Close() }()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > l.opts.MaxFileSize {
		l.fail(path, "file is %s, larger than the %s limit; not read", size(fi.Size()), size(l.opts.MaxFileSize))
		return
	}
	l.read(path, f, explicit)
}

// read reads one file's content, up to the size limit.
func (l *loader) read(path string, r io.Reader, explicit bool) {
	l.fileErrors, l.fileObjects = 0, 0
	// The file may grow after Stat: read one byte more than allowed to
	// notice.
	data, err := io.ReadAll(io.LimitReader(r, l.opts.MaxFileSize+1))
	if err != nil {
		l.fail(path, "%s", errReason(err))
		return
	}
	if int64(len(data)) > l.opts.MaxFileSize {
		l.fail(path, "file is larger than the %s limit; not read", size(l.opts.MaxFileSize))
		return
	}
	l.rep.Files++
	l.content(path, data, explicit)
}

func size(n int64) string {
	if n >= 1<<20 {
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', -1, 64) + " MiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// content decodes the documents of one file.
func (l *loader) content(path string, data []byte, explicit bool) {
	l.fileErrors, l.fileObjects, l.doc = 0, 0, ""
	switch {
	case bytes.HasPrefix(data, []byte{0x1f, 0x8b}):
		l.fail(path, "gzip-compressed (a must-gather archive?): extract it first (tar xzf) and analyze the directory")
		return
	case bytes.HasPrefix(data, []byte("PK\x03\x04")):
		l.fail(path, "zip archive: extract it first and analyze the directory")
		return
	case bytes.IndexByte(data, 0) >= 0:
		l.fail(path, "binary content, not YAML or JSON")
		return
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // UTF-8 byte order mark
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		l.jsonStream(path, data)
	} else {
		l.yamlStream(path, data)
	}
	l.doc = ""
	if explicit && l.fileObjects == 0 && l.fileErrors == 0 {
		l.fail(path, "no Kubernetes objects (apiVersion and kind) in this file")
	}
}

// jsonStream decodes one or more concatenated JSON values.
func (l *loader) jsonStream(path string, data []byte) {
	dec := json.NewDecoder(bytes.NewReader(data))
	for n := 1; ; n++ {
		var raw json.RawMessage
		offset := dec.InputOffset()
		err := dec.Decode(&raw)
		if err == io.EOF {
			return
		}
		l.doc = ""
		if n > 1 {
			start := int(offset) + len(data[offset:]) - len(bytes.TrimLeft(data[offset:], " \t\r\n"))
			l.doc = docPrefix(n, 1+bytes.Count(data[:start], []byte("\n")))
		}
		if err != nil {
			l.failDoc(path, "invalid JSON: %s", jsonErr(err, data, offset))
			return
		}
		l.rep.Documents++
		var v any
		if err := utiljson.Unmarshal(raw, &v); err != nil {
			l.failDoc(path, "invalid JSON: %v", err)
			continue
		}
		l.value(path, v, 0)
	}
}

// jsonErr adds the line of a syntax error.
func jsonErr(err error, data []byte, start int64) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off := start + se.Offset
		if off > int64(len(data)) {
			off = int64(len(data))
		}
		return fmt.Sprintf("line %d: %v", 1+bytes.Count(data[:off], []byte("\n")), se)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of file (truncated?)"
	}
	return err.Error()
}

func docPrefix(n, line int) string {
	return fmt.Sprintf("document %d (line %d): ", n, line)
}

// yamlStream splits a YAML stream into documents and decodes each.
func (l *loader) yamlStream(path string, data []byte) {
	docs := splitYAML(data)
	for i, d := range docs {
		// sigs.k8s.io/yaml (YAML to JSON), with integers kept as int64
		// as the unstructured converter wants them.
		l.doc = ""
		if len(docs) > 1 {
			l.doc = docPrefix(i+1, d.line)
		}
		var v any
		if err := utilyaml.Unmarshal(d.data, &v); err != nil {
			l.failDoc(path, "invalid YAML: %s", yamlErr(err, d.line))
			continue
		}
		if v != nil {
			l.rep.Documents++
		}
		l.value(path, v, 0)
	}
}

// yamlErr makes the "line N" of a YAML error count from the start of the
// file rather than of the document.
func yamlErr(err error, docLine int) string {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	if docLine <= 1 {
		return msg
	}
	const marker = "line "
	i := strings.Index(msg, marker)
	if i < 0 {
		return msg
	}
	j := i + len(marker)
	k := j
	for k < len(msg) && msg[k] >= '0' && msg[k] <= '9' {
		k++
	}
	n, err2 := strconv.Atoi(msg[j:k])
	if err2 != nil {
		return msg
	}
	return msg[:j] + strconv.Itoa(n+docLine-1) + msg[k:]
}

type yamlDoc struct {
	data []byte
	line int // first line of the document in the file, from 1
}

// splitYAML splits on "---" lines (a document start marker, possibly
// followed by content or a comment) and "..." lines (document end).
// Documents that hold only blanks and comments are dropped.
func splitYAML(data []byte) []yamlDoc {
	var docs []yamlDoc
	var cur bytes.Buffer
	start, lineNo := 1, 0
	flush := func() {
		if hasContent(cur.Bytes()) {
			docs = append(docs, yamlDoc{data: bytes.Clone(cur.Bytes()), line: start})
		}
		cur.Reset()
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), len(data)+1)
	for sc.Scan() {
		lineNo++
		line := sc.Bytes()
		trimmed := bytes.TrimRight(line, " \t\r")
		switch {
		case bytes.Equal(trimmed, []byte("---")) ||
			bytes.HasPrefix(line, []byte("--- ")) || bytes.HasPrefix(line, []byte("---\t")):
			flush()
			start = lineNo
			rest := bytes.TrimLeft(line[3:], " \t")
			if len(rest) > 0 && rest[0] != '#' {
				// "--- value": the document starts on this line.
				cur.Write(rest)
				cur.WriteByte('\n')
			} else {
				start = lineNo + 1
			}
		case bytes.Equal(trimmed, []byte("...")):
			flush()
			start = lineNo + 1
		default:
			cur.Write(line)
			cur.WriteByte('\n')
		}
	}
	flush()
	return docs
}

func hasContent(b []byte) bool {
	for _, line := range bytes.Split(b, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if len(t) > 0 && t[0] != '#' && !bytes.HasPrefix(t, []byte("%")) {
			return true
		}
	}
	return false
}

// value handles one decoded document: an object, a List, or a sequence of
// objects (such as `jq .items` output).
func (l *loader) value(path string, v any, depth int) {
	switch t := v.(type) {
	case nil:
	case map[string]any:
		l.object(path, t, depth)
	case []any:
		if depth >= maxListDepth {
			l.failDoc(path, "lists nested deeper than %d levels; not read", maxListDepth)
			return
		}
		for _, item := range t {
			l.value(path, item, depth+1)
		}
	default:
		l.rep.NotObjects++
	}
}

func (l *loader) object(path string, m map[string]any, depth int) {
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	if apiVersion == "" || kind == "" {
		l.rep.NotObjects++
		return
	}
	l.fileObjects++
	if items, isList := m["items"]; isList && (kind == "List" || strings.HasSuffix(kind, "List")) {
		l.list(path, apiVersion, kind, items, depth)
		return
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		l.failDoc(path, "%s: invalid apiVersion %q", kind, apiVersion)
		return
	}
	obj, known := newKnown(gv, kind)
	if !known {
		name := kind
		if gv.Group != "" {
			name += "." + gv.Group
		}
		l.rep.Ignored[name]++
		return
	}
	l.convert(path, m, obj, gv)
}

// list reads the items of a List (kind: List) or of a typed list
// (PodList, VirtualMachineInstanceList). The items of a typed list as the
// API server returns it have no apiVersion and kind: they take the list's.
func (l *loader) list(path, apiVersion, kind string, items any, depth int) {
	if depth >= maxListDepth {
		l.failDoc(path, "lists nested deeper than %d levels; not read", maxListDepth)
		return
	}
	if items == nil {
		return
	}
	arr, ok := items.([]any)
	if !ok {
		l.failDoc(path, "%s: items is not a list", kind)
		return
	}
	itemKind := strings.TrimSuffix(kind, "List")
	for i, item := range arr {
		m, ok := item.(map[string]any)
		if !ok {
			l.failDoc(path, "%s: item %d is not an object", kind, i)
			continue
		}
		if kind != "List" {
			if _, ok := m["apiVersion"]; !ok {
				m["apiVersion"] = apiVersion
			}
			if _, ok := m["kind"]; !ok {
				m["kind"] = itemKind
			}
		}
		l.object(path, m, depth+1)
	}
}

// newKnown returns an empty typed object for the kinds vmobs reads.
func newKnown(gv schema.GroupVersion, kind string) (metav1.Object, bool) {
	switch {
	case gv.Group == "kubevirt.io" && (gv.Version == "v1" || gv.Version == "v1alpha3"):
		// v1alpha3 is served with the v1 schema.
		switch kind {
		case "VirtualMachine":
			return &kubevirtv1.VirtualMachine{}, true
		case "VirtualMachineInstance":
			return &kubevirtv1.VirtualMachineInstance{}, true
		case "VirtualMachineInstanceMigration":
			return &kubevirtv1.VirtualMachineInstanceMigration{}, true
		}
	case gv.Group == "" && gv.Version == "v1":
		switch kind {
		case "Pod":
			return &corev1.Pod{}, true
		case "Node":
			return &corev1.Node{}, true
		case "PersistentVolumeClaim":
			return &corev1.PersistentVolumeClaim{}, true
		case "Event":
			return &corev1.Event{}, true
		}
	case gv.Group == "storage.k8s.io" && gv.Version == "v1":
		switch kind {
		case "StorageClass":
			return &storagev1.StorageClass{}, true
		case "VolumeAttachment":
			return &storagev1.VolumeAttachment{}, true
		}
	case gv.Group == "cdi.kubevirt.io" && kind == "DataVolume":
		// Read as unstructured content: storagefacts.FromDataVolume reads
		// the fields the rules need by their JSON names.
		return &unstructured.Unstructured{}, true
	case gv == v1alpha1.GroupVersion && kind == "VMObservation":
		return &v1alpha1.VMObservation{}, true
	case gv == v1alpha1.GroupVersion && kind == "VMObservationPolicy":
		return &v1alpha1.VMObservationPolicy{}, true
	}
	return nil, false
}

func (l *loader) convert(path string, m map[string]any, obj metav1.Object, gv schema.GroupVersion) {
	kind, _ := m["kind"].(string)
	meta, _ := m["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	if name == "" {
		l.failDoc(path, "%s without metadata.name", kind)
		return
	}
	id := name
	if ns != "" {
		id = ns + "/" + name
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.Object = m
	} else if err := fromUnstructured(m, obj); err != nil {
		l.failDoc(path, "%s %s: cannot convert: %s", kind, id, err)
		return
	}
	if !isNamespaced(obj) {
		obj.SetNamespace("")
	} else if obj.GetNamespace() == "" {
		obj.SetNamespace(namespaceFromPath(path))
	}
	// The typed objects are all served as v1 (or v1alpha1) now.
	if ro, ok := obj.(runtime.Object); ok {
		v := gv.Version
		if gv.Group == "kubevirt.io" {
			v = "v1"
		}
		ro.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{Group: gv.Group, Version: v, Kind: kind})
	}
	l.rep.Loaded[kind]++
	l.add(objKey{kind: kind, namespace: obj.GetNamespace(), name: obj.GetName()}, obj)
}

// fromUnstructured converts with the apimachinery converter and, when it
// fails, asks encoding/json for a message that names the field.
func fromUnstructured(m map[string]any, obj metav1.Object) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	if err = runtime.DefaultUnstructuredConverter.FromUnstructured(m, obj); err == nil {
		return nil
	}
	if b, jerr := json.Marshal(m); jerr == nil {
		target := reflect.New(reflect.TypeOf(obj).Elem()).Interface()
		if jerr := json.Unmarshal(b, target); jerr != nil {
			return errors.New(strings.TrimPrefix(jerr.Error(), "json: "))
		}
	}
	return err
}

// namespaceFromPath finds the <ns> of a must-gather path
// .../namespaces/<ns>/...
func namespaceFromPath(path string) string {
	parts := strings.Split(filepath.ToSlash(path), "/")
	for i := len(parts) - 3; i >= 0; i-- {
		if parts[i] == "namespaces" && parts[i+1] != "" {
			return parts[i+1]
		}
	}
	return metav1.NamespaceDefault
}

// add keeps one copy per object (see the package doc for which).
func (l *loader) add(k objKey, obj metav1.Object) {
	old, dup := l.objs[k]
	if !dup {
		l.objs[k] = obj
		return
	}
	l.rep.Duplicates++
	if preferred(old, obj) {
		l.objs[k] = obj
	}
}

// preferred says whether b should replace a, its copy.
func preferred(a, b metav1.Object) bool {
	if a.GetUID() != b.GetUID() && a.GetUID() != "" && b.GetUID() != "" {
		at, bt := a.GetCreationTimestamp(), b.GetCreationTimestamp()
		if !at.Equal(&bt) {
			return at.Before(&bt)
		}
	}
	ar, aerr := strconv.ParseUint(a.GetResourceVersion(), 10, 64)
	br, berr := strconv.ParseUint(b.GetResourceVersion(), 10, 64)
	return aerr == nil && berr == nil && br > ar
}

func (l *loader) objects() Objects {
	keys := make([]objKey, 0, len(l.objs))
	for k := range l.objs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].namespace != keys[j].namespace {
			return keys[i].namespace < keys[j].namespace
		}
		return keys[i].name < keys[j].name
	})
	var o Objects
	for _, k := range keys {
		o.Add(l.objs[k])
	}
	return o
}

// Add files an object under its kind; objects of other kinds are ignored.
func (o *Objects) Add(obj any) {
	switch t := obj.(type) {
	case *kubevirtv1.VirtualMachine:
		o.VMs = append(o.VMs, t)
	case *kubevirtv1.VirtualMachineInstance:
		o.VMIs = append(o.VMIs, t)
	case *kubevirtv1.VirtualMachineInstanceMigration:
		o.Migrations = append(o.Migrations, t)
	case *corev1.Pod:
		o.Pods = append(o.Pods, t)
	case *corev1.Node:
		o.Nodes = append(o.Nodes, t)
	case *v1alpha1.VMObservation:
		o.Observations = append(o.Observations, t)
	case *v1alpha1.VMObservationPolicy:
		o.Policies = append(o.Policies, t)
	case *corev1.PersistentVolumeClaim:
		o.PVCs = append(o.PVCs, t)
	case *storagev1.StorageClass:
		o.StorageClasses = append(o.StorageClasses, t)
	case *storagev1.VolumeAttachment:
		o.VolumeAttachments = append(o.VolumeAttachments, t)
	case *unstructured.Unstructured:
		o.DataVolumes = append(o.DataVolumes, t)
	case *corev1.Event:
		o.Events = append(o.Events, t)
	}
}

// isNamespaced says whether objects of obj's kind live in a namespace.
func isNamespaced(obj metav1.Object) bool {
	switch obj.(type) {
	case *corev1.Node, *storagev1.StorageClass, *storagev1.VolumeAttachment:
		return false
	}
	return true
}
