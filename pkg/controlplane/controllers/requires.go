package controllers

import (
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"
)

// served returns the descriptors whose Requires the API server serves,
// asking discovery once per group version, and logs one line for each
// one left out. A group version whose discovery fails for another reason
// than not being served counts as served: the controller then runs and
// reports its own failures, as it would without Requires.
func served(logger klog.Logger, client discovery.DiscoveryInterface, descriptors []Descriptor) []Descriptor {
	type groupVersion struct {
		resources map[string]bool // nil: not served
		unknown   bool            // discovery failed
	}
	known := map[schema.GroupVersion]groupVersion{}
	serves := func(gvr schema.GroupVersionResource) bool {
		gv := gvr.GroupVersion()
		found, ok := known[gv]
		if !ok {
			list, err := client.ServerResourcesForGroupVersion(gv.String())
			switch {
			case err == nil:
				found.resources = map[string]bool{}
				for _, r := range list.APIResources {
					found.resources[r.Name] = true
				}
			case apierrors.IsNotFound(err):
			default:
				logger.Info("Discovery failed; running the controllers that need this group version anyway", "groupVersion", gv, "err", err)
				found.unknown = true
			}
			known[gv] = found
		}
		return found.unknown || found.resources[gvr.Resource]
	}
	var out []Descriptor
	for _, d := range descriptors {
		var missing []string
		for _, gvr := range d.Requires {
			if !serves(gvr) {
				missing = append(missing, gvrString(gvr))
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			logger.Info("Controller not started: the API server does not serve what it needs", "controller", d.Name, "missing", strings.Join(missing, ", "))
			continue
		}
		out = append(out, d)
	}
	return out
}

// gvrString is "resource.group/version", or "resource/version" for the
// core group.
func gvrString(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return fmt.Sprintf("%s/%s", gvr.Resource, gvr.Version)
	}
	return fmt.Sprintf("%s.%s/%s", gvr.Resource, gvr.Group, gvr.Version)
}
