package testserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// readCRDs reads the CRDs in paths: files, or directories whose .yaml,
// .yml and .json files are read in name order.
func readCRDs(paths []string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, p := range paths {
		files := []string{p}
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("CRD path: %w", err)
		}
		if info.IsDir() {
			entries, err := os.ReadDir(p)
			if err != nil {
				return nil, fmt.Errorf("CRD path: %w", err)
			}
			files = nil
			for _, e := range entries {
				switch strings.ToLower(filepath.Ext(e.Name())) {
				case ".yaml", ".yml", ".json":
					if !e.IsDir() {
						files = append(files, filepath.Join(p, e.Name()))
					}
				}
			}
		}
		for _, f := range files {
			crds, err := readCRDFile(f)
			if err != nil {
				return nil, err
			}
			out = append(out, crds...)
		}
	}
	return out, nil
}

// readCRDFile reads every CRD document of one YAML or JSON file; empty
// documents are skipped, documents of another kind are an error.
func readCRDFile(path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("CRD file: %w", err)
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for i := 0; ; i++ {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := dec.Decode(&crd); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s, document %d: %w", path, i+1, err)
		}
		if crd.Kind == "" && crd.APIVersion == "" && crd.Name == "" {
			continue
		}
		if crd.APIVersion != apiextensionsv1.SchemeGroupVersion.String() || crd.Kind != "CustomResourceDefinition" {
			return nil, fmt.Errorf("%s, document %d: %s %q is not an %s CustomResourceDefinition",
				path, i+1, crd.Kind, crd.Name, apiextensionsv1.SchemeGroupVersion)
		}
		out = append(out, &crd)
	}
}

// InstallCRDs creates the CRDs (updating those that exist) and waits until
// each is established and its served versions are in discovery, so that
// clients and REST mappers find them at once.
func InstallCRDs(ctx context.Context, cfg *rest.Config, timeout time.Duration, crds ...*apiextensionsv1.CustomResourceDefinition) error {
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	api := client.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		_, err := api.Create(ctx, crd.DeepCopy(), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			var existing *apiextensionsv1.CustomResourceDefinition
			if existing, err = api.Get(ctx, crd.Name, metav1.GetOptions{}); err == nil {
				updated := crd.DeepCopy()
				updated.ResourceVersion = existing.ResourceVersion
				_, err = api.Update(ctx, updated, metav1.UpdateOptions{})
			}
		}
		if err != nil {
			return fmt.Errorf("CRD %s: %w", crd.Name, err)
		}
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	for _, crd := range crds {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			got, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil || !established(got) {
				return false, nil
			}
			for _, v := range crd.Spec.Versions {
				if !v.Served {
					continue
				}
				resources, err := disco.ServerResourcesForGroupVersion(crd.Spec.Group + "/" + v.Name)
				if err != nil || !slices.ContainsFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Name == crd.Spec.Names.Plural }) {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established and served: %w", crd.Name, err)
		}
	}
	return nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}
