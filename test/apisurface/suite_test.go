// Package apisurface proves the test ground is real: a real kube-apiserver
// with our CRD and KubeVirt's, exercised through typed clients and kubectl.
package apisurface

import (
	"context"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/test/support"
)

var (
	ctx        context.Context
	env        *testenv.Env
	k8s        client.Client
	kubeconfig string
)

func TestAPISurface(t *testing.T) {
	support.RunSpecs(t, "API surface suite", support.Timing{})
}

var _ = BeforeSuite(func() {
	suite := support.StartSuite(testenv.Options{}, simulator.DefaultSeed)
	ctx, env, k8s = suite.Ctx, suite.Env, suite.K8s
	kubeconfig = filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(env.Kubeconfig(kubeconfig)).To(Succeed())
})
