// libpng's simplified API, wrapped in two functions: its format constants are macros that
// Swift cannot import.
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/// Decodes a PNG held in memory to 8-bit RGBA. Returns 0 on success, with `*pixels`
/// allocated by malloc (free it with free); otherwise writes libpng's message.
static inline int clibpng_decode_rgba(const void *data, size_t size, unsigned char **pixels,
                                      unsigned *width, unsigned *height, char *message, size_t message_size) {
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&image, data, size)) {
        snprintf(message, message_size, "%s", image.message);
        return 1;
    }
    image.format = PNG_FORMAT_RGBA;
    unsigned char *buffer = malloc(PNG_IMAGE_SIZE(image));
    if (buffer == NULL) {
        png_image_free(&image);
        snprintf(message, message_size, "out of memory");
        return 2;
    }
    if (!png_image_finish_read(&image, NULL, buffer, 0, NULL)) {
        snprintf(message, message_size, "%s", image.message);
        free(buffer);
        return 3;
    }
    *pixels = buffer;
    *width = image.width;
    *height = image.height;
    return 0;
}

/// Encodes 8-bit RGBA pixels as a PNG in memory. Returns 0 on success, with `*png`
/// allocated by malloc.
static inline int clibpng_encode_rgba(const unsigned char *pixels, unsigned width, unsigned height,
                                      unsigned char **png, size_t *png_size, char *message, size_t message_size) {
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    image.width = width;
    image.height = height;
    image.format = PNG_FORMAT_RGBA;
    png_alloc_size_t size = 0;
    if (!png_image_write_to_memory(&image, NULL, &size, 0, pixels, 0, NULL)) {
        snprintf(message, message_size, "%s", image.message);
        return 1;
    }
    unsigned char *buffer = malloc(size);
    if (buffer == NULL) {
        snprintf(message, message_size, "out of memory");
        return 2;
    }
    if (!png_image_write_to_memory(&image, buffer, &size, 0, pixels, 0, NULL)) {
        snprintf(message, message_size, "%s", image.message);
        free(buffer);
        return 3;
    }
    *png = buffer;
    *png_size = size;
    return 0;
}
