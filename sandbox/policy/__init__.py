"""What a candidate's source may do: the judge's static rules, read from the text it holds
(never run): Python (``python``), CUDA / Triton specifics (``gpu``), C / C++ sources
(``native``) and the symbols and headers of what they compiled to (``symbols``)."""
