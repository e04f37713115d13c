package function

func registerHash(r *Registry) {}
