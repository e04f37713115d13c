package function

func registerObject(r *Registry) {}
