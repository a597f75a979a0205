// An empty translation unit: the rotor_<layer>_layer_check shared objects
// (CMakeLists.txt) are made of a layer's library and the layers below it
// only, linked with --no-undefined, so a call that points up a layer fails
// to link.
