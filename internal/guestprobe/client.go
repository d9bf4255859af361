package guestprobe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// The subresources a probe reads, in the order it reads them
// (kv:pkg/virt-api/rest/subresource.go GuestOSInfo, UserList,
// FilesystemList; virtctl guestosinfo, userlist and fslist read the same).
const (
	SubGuestOSInfo     = "guestosinfo"
	SubUserList        = "userlist"
	SubFilesystemList  = "filesystemlist"
	subresourcesPrefix = "/apis/subresources.kubevirt.io/v1"
)

// maxAnswer bounds what one call may return (a variable for tests): a
// guest with a few hundred mounts answers tens of KiB.
var maxAnswer = 1 << 20

// maxErrorBody bounds what is read of an error's body: enough for the
// message, never the whole of a hostile answer.
const maxErrorBody = 4 << 10

// Kind says how a call failed; it is the result label of the metrics.
type Kind string

// Kinds of failure. The first five say the API cannot be used at all (the
// Source stops probing and, if it lasts, says so for every VM); Gone says
// the VMI cannot be probed now, which is no one's failure; the last five
// are this VMI's path's (or, when a large share of the fleet fails alike,
// virt-api's or virt-handler's). None is the guest agent's: virt-launcher
// answers the three subresources from its cache of the agent's data
// (kv:pkg/virt-launcher/virtwrap/manager.go:2553-2650), never by asking
// the agent.
const (
	// KindThrottled: 429, the API server's or virt-api's rate limit.
	KindThrottled Kind = "throttled"
	// KindUnavailable: 502, 503, 504, the aggregator's "the server is
	// currently unable to handle the request" (virt-api down).
	KindUnavailable Kind = "unavailable"
	// KindUnreachable: the API server cannot be reached.
	KindUnreachable Kind = "unreachable"
	// KindRefused: 401 or 403, the controller may not read the
	// subresources (RBAC).
	KindRefused Kind = "refused"
	// KindNotServed: 404 that does not name the VMI: no API serves
	// subresources.kubevirt.io (KubeVirt not installed, APIService gone).
	KindNotServed Kind = "not_served"
	// KindGone: the VMI is gone, not running, or virt-api does not see its
	// agent connected (the condition in the cache lags).
	KindGone Kind = "gone"
	// KindNotSupported: the agent does not support the command.
	KindNotSupported Kind = "not_supported"
	// KindNoHandler: virt-api finds no virt-handler pod on the VMI's node
	// ("No virt-handler on node %s found",
	// kv:staging/src/kubevirt.io/client-go/kubecli/handler.go:126): a
	// fault of the node's KubeVirt, not of the guest.
	KindNoHandler Kind = "no_handler"
	// KindAgent: virt-api answered another error: it could not reach
	// virt-handler, virt-handler could not find or dial the launcher's
	// command socket (kv:pkg/virt-handler/rest/lifecycle.go:253-275), or
	// the launcher's call failed. The label keeps its old name; the agent
	// is not asked.
	KindAgent Kind = "agent_error"
	// KindTimeout: no answer within the call's timeout.
	KindTimeout Kind = "timeout"
	// KindBadAnswer: an answer over the size limit, or not the JSON of
	// KubeVirt's type.
	KindBadAnswer Kind = "bad_answer"
)

// apiDown says whether a kind means the API cannot be used at all.
func (k Kind) apiDown() bool {
	switch k {
	case KindThrottled, KindUnavailable, KindUnreachable, KindRefused, KindNotServed:
		return true
	}
	return false
}

// Error is a call that did not give an answer to decode.
type Error struct {
	Kind Kind
	// Sub is the subresource called.
	Sub string
	// Msg says what happened, bounded and free of control characters.
	Msg string
	// RetryAfter is the server's Retry-After, 0 when it sent none.
	RetryAfter time.Duration
}

func (e *Error) Error() string { return e.Msg }

// API reads one subresource of a VMI: the body of a 2xx answer, or an
// *Error. Client is the real one.
type API interface {
	Get(ctx context.Context, key types.NamespacedName, sub string) ([]byte, error)
}

// Client GETs the subresources through the API server, which proxies them
// to virt-api (an aggregated API). It sends the requests itself on the
// manager's HTTP client (its credentials and connections) rather than
// through a client-go RESTClient, whose requests read an error's body
// whole and retry a 429 by sleeping in the caller: a probe must bound
// both.
type Client struct {
	base *url.URL
	http *http.Client
	// Timeout bounds each call.
	Timeout time.Duration
}

// NewClient builds a client for the API server of cfg, sending through
// httpClient (the manager's: mgr.GetHTTPClient()). timeout bounds each call;
// 0 is Defaults.Timeout.
func NewClient(cfg *rest.Config, httpClient *http.Client, timeout time.Duration) (*Client, error) {
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("the API server's URL: %w", err)
	}
	if httpClient == nil {
		if httpClient, err = rest.HTTPClientFor(cfg); err != nil {
			return nil, err
		}
	}
	if timeout <= 0 {
		timeout = Defaults.Timeout
	}
	return &Client{base: base, http: httpClient, Timeout: timeout}, nil
}

// Path is the API path of a VMI's subresource.
func Path(key types.NamespacedName, sub string) string {
	return subresourcesPrefix + "/namespaces/" + url.PathEscape(key.Namespace) +
		"/virtualmachineinstances/" + url.PathEscape(key.Name) + "/" + sub
}

// Get reads one subresource within c.Timeout. The answer is read through
// a limit: one over maxAnswer is an error, never buffered whole.
func (c *Client) Get(ctx context.Context, key types.NamespacedName, sub string) ([]byte, error) {
	cctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	u := *c.base
	u.Path = strings.TrimSuffix(u.Path, "/") + Path(key, sub)
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, &Error{Kind: KindUnreachable, Sub: sub, Msg: fmt.Sprintf("%s: %v", sub, err)}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, sub, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return nil, classify(resp.StatusCode, resp.Header.Get("Retry-After"), body, key, sub)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(maxAnswer)+1))
	if err != nil {
		return nil, c.transportError(ctx, sub, err)
	}
	if len(body) > maxAnswer {
		return nil, &Error{Kind: KindBadAnswer, Sub: sub, Msg: fmt.Sprintf("%s: answer over %s", sub, sizeText(maxAnswer))}
	}
	return body, nil
}

// transportError names a failure to send or read: the call's own deadline
// is the guest's timeout; the caller's cancellation is returned as is (a
// shutdown, counted against no one); anything else means the API server
// cannot be reached.
func (c *Client) transportError(ctx context.Context, sub string, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Kind: KindTimeout, Sub: sub, Msg: fmt.Sprintf("%s did not answer within %s", sub, c.Timeout)}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &Error{Kind: KindUnreachable, Sub: sub, Msg: sub + ": connection to the API server refused"}
	}
	return &Error{Kind: KindUnreachable, Sub: sub, Msg: clean(sub + ": " + err.Error())}
}

// classify turns an HTTP error answer into an *Error. virt-api answers
// every failure of these three subresources with a 500 and the error's
// text (kv:pkg/virt-api/rest/subresource.go httpGetRequestHandler writes
// the StatusError of prepareConnection — VMI not found, not running,
// agent not connected — as plain text under 500), so the text decides
// between a VMI that cannot be probed and an agent that failed; a proxy or
// another version that sends 404 or 409 for them is read the same way.
func classify(code int, retryAfter string, body []byte, key types.NamespacedName, sub string) *Error {
	text := errorText(body)
	e := &Error{Sub: sub, RetryAfter: parseRetryAfter(retryAfter)}
	lower := strings.ToLower(text)
	switch {
	case code == http.StatusTooManyRequests:
		e.Kind, e.Msg = KindThrottled, sub+": throttled (429)"
	case strings.Contains(lower, "the server is currently unable to handle the request"),
		code == http.StatusServiceUnavailable, code == http.StatusBadGateway, code == http.StatusGatewayTimeout:
		e.Kind, e.Msg = KindUnavailable, fmt.Sprintf("%s: virt-api unavailable (%d)", sub, code)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		e.Kind, e.Msg = KindRefused, fmt.Sprintf("%s: refused (%d): %s", sub, code, text)
	case namesVMI(lower, key) && (code == http.StatusNotFound || code == http.StatusConflict || code == http.StatusInternalServerError) &&
		(strings.Contains(lower, "not found") || strings.Contains(lower, "vmi is not running") ||
			strings.Contains(lower, "does not have guest agent connected")):
		e.Kind, e.Msg = KindGone, fmt.Sprintf("%s: %s", sub, text)
	case code == http.StatusNotFound:
		e.Kind, e.Msg = KindNotServed, fmt.Sprintf("%s: not served (404): %s", sub, text)
	case strings.Contains(lower, "unable to connect to virtualmachineinstance because phase is"):
		e.Kind, e.Msg = KindGone, fmt.Sprintf("%s: %s", sub, text)
	case notSupported(lower):
		e.Kind, e.Msg = KindNotSupported, fmt.Sprintf("%s: not supported by the guest agent", sub)
	case strings.Contains(lower, "no virt-handler on node"):
		e.Kind, e.Msg = KindNoHandler, fmt.Sprintf("%s: virt-api finds no virt-handler on the VMI's node (%d): %s", sub, code, text)
	default:
		e.Kind, e.Msg = KindAgent, fmt.Sprintf("%s failed (%d): %s", sub, code, text)
	}
	e.Msg = clean(e.Msg)
	return e
}

// namesVMI says whether an error's text is about this VMI (KubeVirt
// quotes the name: virtualmachineinstance.kubevirt.io "NAME" not found),
// rather than the API server's own "the server could not find the
// requested resource".
func namesVMI(lower string, key types.NamespacedName) bool {
	return strings.Contains(lower, "virtualmachineinstance") && strings.Contains(lower, strings.ToLower(strconv.Quote(key.Name)))
}

// notSupported recognises an agent that lacks a command: QEMU's guest
// agent answers "The command guest-get-users has not been found" or "…has
// been disabled"; libvirt "not supported" or "unsupported".
func notSupported(lower string) bool {
	for _, s := range []string{"not supported", "unsupported", "has not been found", "has been disabled"} {
		if strings.Contains(lower, s) {
			return true
		}
	}
	return false
}

// errorText is the message of an error answer: a Status' message, else
// the text, bounded.
func errorText(body []byte) string {
	var st struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &st) == nil && st.Kind == "Status" && st.Message != "" {
		return clean(st.Message)
	}
	return clean(string(body))
}

// parseRetryAfter reads Retry-After in seconds (the form the API server
// and virt-api send); an HTTP date or garbage is none.
func parseRetryAfter(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(min(n, 3600)) * time.Second
}

func sizeText(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return strconv.Itoa(n>>20) + " MiB"
	}
	return strconv.Itoa(n) + " bytes"
}
