package lab

import (
	"context"
	"time"

	"github.com/novox/mesh-provisioner/outputs/control"
)

// explainModule asks the client on sock why module is as it is (as the
// operator's `mesh-provisioner-client graph explain` does).
func explainModule(ctx context.Context, sock, module string) (*control.Explanation, error) {
	return control.NewClient(sock, 10*time.Second).Explain(ctx, module)
}
