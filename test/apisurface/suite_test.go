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

	"github.com/vmobs/vmobs/internal/testenv"
)

var (
	env        *testenv.Env
	k8s        client.Client
	kubeconfig string
	ctx        = context.Background()
)

func TestAPISurface(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "API surface suite")
}

var _ = BeforeSuite(func() {
	var err error
	env, err = testenv.Start(testenv.Options{})
	Expect(err).NotTo(HaveOccurred())
	k8s, err = env.Client()
	Expect(err).NotTo(HaveOccurred())
	kubeconfig = filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(env.Kubeconfig(kubeconfig)).To(Succeed())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
