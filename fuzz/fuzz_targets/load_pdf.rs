#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| excerpt_fuzz_targets::load_pdf(data));
