package v1

// SetDefaults defaults a Widget's spec.color to blue. The registry
// registers it as the Widget type's defaulting function.
func SetDefaults(w *Widget) {
	if w.Spec.Color == "" {
		w.Spec.Color = ColorBlue
	}
}
