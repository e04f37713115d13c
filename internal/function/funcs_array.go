package function

func registerArray(r *Registry) {}
