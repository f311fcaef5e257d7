package allinone

import (
	"context"
	"fmt"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
)

// run serves until ctx is done or a part fails: the API server, the
// controllers (nil: none) and the scheduled snapshots, over store. cp is
// ready once the server is. Then it stops the controllers, the server,
// and runs stops in reverse: the etcd health checks' clients, etcd and
// the data dir lock.
func (cp *ControlPlane) run(ctx context.Context, o Options, prepared *apiserver.PreparedServer, store *etcd.Handle,
	controllersCfg *controllers.Config, stops []func()) {
	defer close(cp.done)
	serverCtx, cancelServer := context.WithCancel(ctx)
	server := prepared.Start(serverCtx)
	go func() {
		select {
		case <-server.Ready():
			klog.InfoS("Control plane is ready", "url", cp.URL, "adminKubeconfig", cp.AdminKubeconfig)
			close(cp.ready)
			if !o.KeepStartupMemory {
				releaseStartupGarbage()
			}
		case <-server.Done():
		}
	}()
	// Controllers stop first (their context ends with the server's)
	// and are waited for before etcd goes.
	controllersCtx, cancelControllers := context.WithCancel(serverCtx)
	var controllersErr chan error // nil without controllers: never ready
	waitControllers := func() error {
		if controllersErr == nil {
			return nil
		}
		return <-controllersErr
	}
	if controllersCfg != nil {
		controllersErr = make(chan error, 1)
		go func() { controllersErr <- controllers.Run(controllersCtx, controllersCfg) }()
	}
	if o.SnapshotInterval > 0 {
		go snapshotEvery(serverCtx, EtcdSocket(cp.DataDir), snapshotDir(cp.DataDir, o), o.SnapshotInterval, o.SnapshotRetention, o.SnapshotCompress,
			EtcdDir(cp.DataDir), store.LowDisk)
	}
	var errs []error
	select {
	case <-server.Done():
		errs = append(errs, server.Err())
		cancelControllers()
		errs = append(errs, waitControllers())
	case err := <-store.Err():
		errs = append(errs, fmt.Errorf("etcd: %w", err))
		cancelServer()
		errs = append(errs, waitControllers(), server.Close())
	case err := <-controllersErr:
		if err != nil {
			errs = append(errs, fmt.Errorf("controllers: %w", err))
		}
		errs = append(errs, server.Close())
	}
	cancelControllers()
	cancelServer()
	// The API server has drained and destroyed its storage; now the rest.
	runReversed(stops)
	cp.err = utilerrors.NewAggregate(errs)
	klog.V(1).InfoS("Control plane stopped", "dataDir", cp.DataDir)
}
