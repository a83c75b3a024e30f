/*
 * wabt_engine.cc - engine.h over wabt's interpreter (Debian `wabt`,
 * libwabt.a). The only C++ file in spore: everything else sees the C
 * interface. wabt is built without exceptions; nothing here throws, and
 * every std::string crossing back to C is copied into a bounded buffer.
 *
 * What it must never do: enable a feature outside the runner world, return
 * a pointer into wabt's objects that outlives the instance, or let a trap
 * or a link error become anything but an error message.
 */
#include "wasm/engine.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "wabt/binary-reader.h"
#include "wabt/error-formatter.h"
#include "wabt/interp/binary-reader-interp.h"
#include "wabt/interp/interp.h"

using namespace wabt;
namespace wi = wabt::interp;

namespace {

void put(char *out, size_t n, const std::string &s)
{
    if (!out || n == 0)
        return;
    size_t len = s.size() < n - 1 ? s.size() : n - 1;
    memcpy(out, s.data(), len);
    out[len] = '\0';
    while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == ' '))
        out[--len] = '\0';
}

/* The runner world's feature set (runners.md §3). */
Features world_features()
{
    Features f;
    f.disable_exceptions();
    f.enable_mutable_globals();
    f.disable_sat_float_to_int();
    f.enable_sign_extension();
    f.disable_simd();
    f.disable_threads();
    f.disable_function_references();
    f.enable_multi_value();
    f.disable_tail_call();
    f.enable_bulk_memory();
    f.disable_reference_types();
    f.disable_annotations();
    f.disable_code_metadata();
    f.disable_gc();
    f.disable_memory64();
    f.disable_multi_memory();
    f.disable_extended_const();
    f.disable_relaxed_simd();
    return f;
}

sp_wasm_valtype valtype(Type t)
{
    switch (t) {
    case Type::I32: return SP_WASM_I32;
    case Type::I64: return SP_WASM_I64;
    case Type::F32: return SP_WASM_F32;
    case Type::F64: return SP_WASM_F64;
    default: return SP_WASM_OTHER;
    }
}

wi::Value to_value(Type t, uint64_t bits)
{
    switch (t) {
    case Type::I32: return wi::Value::Make(static_cast<wi::u32>(bits));
    case Type::F32: {
        wi::u32 b = static_cast<wi::u32>(bits);
        float f;
        memcpy(&f, &b, sizeof f);
        return wi::Value::Make(f);
    }
    case Type::F64: {
        double d;
        memcpy(&d, &bits, sizeof d);
        return wi::Value::Make(d);
    }
    default: return wi::Value::Make(static_cast<wi::u64>(bits));
    }
}

uint64_t from_value(Type t, const wi::Value &v)
{
    switch (t) {
    case Type::I32: return v.Get<wi::u32>();
    case Type::F32: {
        float f = v.Get<wi::f32>();
        wi::u32 b;
        memcpy(&b, &f, sizeof b);
        return b;
    }
    case Type::F64: {
        double d = v.Get<wi::f64>();
        uint64_t b;
        memcpy(&b, &d, sizeof b);
        return b;
    }
    case Type::I64: return v.Get<wi::u64>();
    default: return 0;
    }
}

struct Extern {
    std::string module, name;
    sp_wasm_extern view;
};

void describe(const wi::ExternType &type, Extern &e)
{
    memset(&e.view, 0, sizeof e.view);
    switch (type.kind) {
    case ExternalKind::Func: {
        auto &ft = static_cast<const wi::FuncType &>(type);
        e.view.kind = SP_WASM_FUNC;
        e.view.nparams = static_cast<uint32_t>(ft.params.size());
        e.view.nresults = static_cast<uint32_t>(ft.results.size());
        for (size_t i = 0; i < ft.params.size() && i < SP_WASM_MAX_SIG; i++)
            e.view.params[i] = valtype(ft.params[i]);
        for (size_t i = 0; i < ft.results.size() && i < SP_WASM_MAX_SIG; i++)
            e.view.results[i] = valtype(ft.results[i]);
        break;
    }
    case ExternalKind::Memory: {
        auto &mt = static_cast<const wi::MemoryType &>(type);
        e.view.kind = SP_WASM_MEMORY;
        e.view.min_pages = mt.limits.initial;
        e.view.max_pages = mt.limits.max;
        e.view.has_max = mt.limits.has_max;
        e.view.shared = mt.limits.is_shared;
        e.view.is64 = mt.limits.is_64;
        break;
    }
    case ExternalKind::Table: e.view.kind = SP_WASM_TABLE; break;
    case ExternalKind::Global: e.view.kind = SP_WASM_GLOBAL; break;
    case ExternalKind::Tag: e.view.kind = SP_WASM_TAG; break;
    }
}

} // namespace

struct sp_wasm_module {
    wi::Store store{world_features()};
    wi::Module::Ptr module;
    std::vector<Extern> imports, exports;
};

struct sp_wasm_instance {
    sp_wasm_module *m = nullptr;
    wi::Instance::Ptr instance;
    wi::Memory::Ptr memory;
    sp_wasm_host_fn host = nullptr;
    void *ctx = nullptr;
    bool ready = false; /* instantiation finished: `memory` is known */
};

extern "C" sp_wasm_module *sp_wasm_load(const void *bytes, size_t len, char *err, size_t n)
{
    std::unique_ptr<sp_wasm_module> m(new (std::nothrow) sp_wasm_module());
    if (!m) {
        put(err, n, "out of memory");
        return nullptr;
    }
    Errors errors;
    wi::ModuleDesc desc;
    ReadBinaryOptions options(world_features(), nullptr, false, true, true);
    if (Failed(wi::ReadBinaryInterp("runner.wasm", bytes, len, options, &errors, &desc))) {
        std::string text = FormatErrorsToString(errors, Location::Type::Binary);
        put(err, n, text.empty() ? "not a valid WebAssembly module" : text);
        return nullptr;
    }
    for (auto &imp : desc.imports) {
        Extern e;
        e.module = imp.type.module;
        e.name = imp.type.name;
        describe(*imp.type.type, e);
        m->imports.push_back(std::move(e));
    }
    for (auto &exp : desc.exports) {
        Extern e;
        e.name = exp.type.name;
        describe(*exp.type.type, e);
        m->exports.push_back(std::move(e));
    }
    for (auto &e : m->imports) {
        e.view.module = e.module.c_str();
        e.view.name = e.name.c_str();
    }
    for (auto &e : m->exports) {
        e.view.module = "";
        e.view.name = e.name.c_str();
    }
    m->module = wi::Module::New(m->store, std::move(desc));
    return m.release();
}

extern "C" void sp_wasm_module_free(sp_wasm_module *m) { delete m; }

extern "C" size_t sp_wasm_import_count(const sp_wasm_module *m) { return m->imports.size(); }

extern "C" const sp_wasm_extern *sp_wasm_import(const sp_wasm_module *m, size_t i)
{
    return i < m->imports.size() ? &m->imports[i].view : nullptr;
}

extern "C" size_t sp_wasm_export_count(const sp_wasm_module *m) { return m->exports.size(); }

extern "C" const sp_wasm_extern *sp_wasm_export(const sp_wasm_module *m, size_t i)
{
    return i < m->exports.size() ? &m->exports[i].view : nullptr;
}

extern "C" sp_wasm_instance *sp_wasm_instantiate(sp_wasm_module *m, sp_wasm_host_fn host,
                                                 void *ctx, char *err, size_t n)
{
    std::unique_ptr<sp_wasm_instance> inst(new (std::nothrow) sp_wasm_instance());
    if (!inst) {
        put(err, n, "out of memory");
        return nullptr;
    }
    inst->m = m;
    inst->host = host;
    inst->ctx = ctx;
    sp_wasm_instance *raw = inst.get();
    wi::RefVec imports;
    const auto &descs = m->module->desc().imports;
    for (size_t i = 0; i < descs.size(); i++) {
        const auto &type = *descs[i].type.type;
        if (type.kind != ExternalKind::Func) {
            put(err, n, "import " + descs[i].type.module + "." + descs[i].type.name +
                            " is not a function");
            return nullptr;
        }
        const auto &ft = static_cast<const wi::FuncType &>(type);
        wi::FuncType sig = ft;
        auto cb = [raw, i, sig](wi::Thread &thread, const wi::Values &params,
                                wi::Values &results, wi::Trap::Ptr *trap) -> Result {
            uint64_t args[SP_WASM_MAX_SIG] = {0}, res[SP_WASM_MAX_SIG] = {0};
            if (sig.params.size() > SP_WASM_MAX_SIG || sig.results.size() > SP_WASM_MAX_SIG) {
                *trap = wi::Trap::New(thread.store(), "host function signature too large");
                return Result::Error;
            }
            for (size_t k = 0; k < params.size(); k++)
                args[k] = from_value(sig.params[k], params[k]);
            char message[256] = "";
            if (raw->host(raw->ctx, raw->ready ? raw : nullptr, i, args, res, message,
                          sizeof message) != 0) {
                *trap = wi::Trap::New(thread.store(), message[0] ? message : "host trap");
                return Result::Error;
            }
            for (size_t k = 0; k < results.size() && k < sig.results.size(); k++)
                results[k] = to_value(sig.results[k], res[k]);
            return Result::Ok;
        };
        imports.push_back(wi::HostFunc::New(m->store, ft, cb).ref());
    }
    wi::Trap::Ptr trap;
    inst->instance = wi::Instance::Instantiate(m->store, m->module.ref(), imports, &trap);
    if (!inst->instance) {
        put(err, n, trap ? trap->message() : "cannot instantiate the module");
        return nullptr;
    }
    const auto &exports = m->module->desc().exports;
    for (size_t i = 0; i < exports.size(); i++)
        if (exports[i].type.name == "memory" && exports[i].type.type->kind == ExternalKind::Memory)
            inst->memory = m->store.UnsafeGet<wi::Memory>(inst->instance->exports()[i]);
    inst->ready = true;
    return inst.release();
}

extern "C" void sp_wasm_instance_free(sp_wasm_instance *inst) { delete inst; }

extern "C" int sp_wasm_call(sp_wasm_instance *inst, const char *name, const uint64_t *args,
                            size_t nargs, uint64_t *results, size_t nresults, char *err,
                            size_t n)
{
    sp_wasm_module *m = inst->m;
    const auto &exports = m->module->desc().exports;
    for (size_t i = 0; i < exports.size(); i++) {
        if (exports[i].type.name != name || exports[i].type.type->kind != ExternalKind::Func)
            continue;
        wi::Func::Ptr fn = m->store.UnsafeGet<wi::Func>(inst->instance->exports()[i]);
        const wi::FuncType &ft = fn->type();
        if (ft.params.size() != nargs || ft.results.size() != nresults) {
            put(err, n, std::string("export ") + name + " has another arity");
            return -1;
        }
        wi::Values params, out;
        for (size_t k = 0; k < nargs; k++)
            params.push_back(to_value(ft.params[k], args[k]));
        wi::Trap::Ptr trap;
        if (Failed(fn->Call(m->store, params, out, &trap))) {
            put(err, n, trap ? trap->message() : "trap");
            return -1;
        }
        for (size_t k = 0; k < nresults && k < out.size(); k++)
            results[k] = from_value(ft.results[k], out[k]);
        return 0;
    }
    put(err, n, std::string("no exported function ") + name);
    return -1;
}

extern "C" uint8_t *sp_wasm_memory(sp_wasm_instance *inst, uint64_t *size)
{
    if (!inst->memory) {
        *size = 0;
        return nullptr;
    }
    *size = inst->memory->ByteSize();
    return inst->memory->UnsafeData();
}
