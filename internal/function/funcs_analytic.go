package function

func registerAnalytic(r *Registry) {}
