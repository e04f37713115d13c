package function

func registerMisc(r *Registry) {}
